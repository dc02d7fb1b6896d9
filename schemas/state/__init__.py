"""The one model of controller state, in Kafka's MetadataImage/MetadataDelta shape: an immutable image with
provenance (image.py), a pure `apply` and the fold `replay` (apply.py), the fast mutable delta equal to that
fold (delta.py: ImageBuilder, fold), the rules every handler applies (rules.py), the image as JSON values and back (codec.py). The normalizers of every
source, the simulator and the store's oracle all keep their controller view as this model; it imports only
the event contract."""
