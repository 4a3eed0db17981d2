// adv_topk.h: TopK advanced API
#pragma once
