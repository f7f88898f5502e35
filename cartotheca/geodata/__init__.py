"""cartotheca.geodata: reading uploaded files, storing datasets, exporting them."""
