"""What the model learns: pre-training, language, probe and discriminator studies."""
