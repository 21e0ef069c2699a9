"""Raw text in, answers out: SavedModels and .tflite files written (`export`, `electra
export`) and run on text files (`predict`, `electra predict`). The scorer is scoring/.
"""
