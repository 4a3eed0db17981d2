// std_type_traits.h: AscendC::Std type traits
#pragma once
