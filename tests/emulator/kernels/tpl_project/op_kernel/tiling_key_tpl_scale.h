// trex test op project (written for trex): the ASCENDC_TPL_* template parameters of TplScale, shared by
// op_host (ASCENDC_TPL_SEL_PARAM) and op_kernel (the template kernel's instantiations).
#pragma once
#include "ascendc/host_api/tiling/template_argument.h"

ASCENDC_TPL_ARGS_DECL(
    TplScale,
    ASCENDC_TPL_DATATYPE_DECL(D_T, C_DT_FLOAT16, C_DT_FLOAT),                     // 8 bits: the ge value
    ASCENDC_TPL_UINT_DECL(SCALE, ASCENDC_TPL_4_BW, ASCENDC_TPL_UI_MIX, 1, 1, 3, 7),  // {1, 2, 3, 7}: 4 bits of index
    ASCENDC_TPL_BOOL_DECL(USE_PAD, 0, 1),                                          // 1 bit
);

ASCENDC_TPL_SEL(
    ASCENDC_TPL_ARGS_SEL(ASCENDC_TPL_DATATYPE_SEL(D_T, C_DT_FLOAT16),
                         ASCENDC_TPL_UINT_SEL(SCALE, ASCENDC_TPL_UI_RANGE, 1, 1, 3),
                         ASCENDC_TPL_BOOL_SEL(USE_PAD, 0, 1), ),
    // parameters out of declaration order: matched by name, as CANN's encoder does
    ASCENDC_TPL_ARGS_SEL(ASCENDC_TPL_BOOL_SEL(USE_PAD, 1), ASCENDC_TPL_DATATYPE_SEL(D_T, C_DT_FLOAT),
                         ASCENDC_TPL_UINT_SEL(SCALE, ASCENDC_TPL_UI_LIST, 2, 7)),
);
