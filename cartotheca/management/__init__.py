"""cartotheca.management: administration commands, run from the CLI or as jobs over HTTP."""
