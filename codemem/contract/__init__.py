"""The Add/Search contract every front end shares: its typed values (`types`) and the checks
beyond their JSON types (`validation`)."""
