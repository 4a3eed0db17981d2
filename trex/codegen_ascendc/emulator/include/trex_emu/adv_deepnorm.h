// adv_deepnorm.h: the DeepNorm advanced API
#pragma once
