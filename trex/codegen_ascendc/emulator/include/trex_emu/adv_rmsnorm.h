// adv_rmsnorm.h: RmsNorm advanced API
#pragma once
