"""cartotheca.db: models, engine and migrations."""
