"""How fast training is fed and stepped: training steps, input pipelines, readers, data
preparation."""
