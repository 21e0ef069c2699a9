"""LiteRT (TFLite): `.tflite` files on raw text (convert.py) and running them (model.py)."""
