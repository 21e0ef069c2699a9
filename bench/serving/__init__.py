"""How fast and how faithful serving is: SavedModels, LiteRT files, server graphs, question
answering."""
