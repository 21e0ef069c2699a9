"""Where the time goes: profiler runs by op and by kernel, for training steps and prediction."""
