"""cartotheca.catalogue.csw: the catalogue's CSW 2.0.2/3.0.0 endpoint, pycsw over the catalogue's tables."""
