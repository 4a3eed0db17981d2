// adv_transdata.h: TransData advanced API and its Layout/Shape/Stride helpers
#pragma once
