"""The generic table operations, done by pylance on the dataset at a table's location.

Split by concern: `access` (locating and opening a table, Arrow bodies), `errors` (pylance
errors -> the spec's), `writes`, `reads`, `indexes`, `history` (versions, tags, branches),
`schema` (columns and metadata) and `lifecycle` (what also involves the catalog).
"""
