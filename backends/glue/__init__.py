"""AWS Glue Data Catalog backend (`--impl glue`), on boto3.

Two namespace layouts, chosen by the `hierarchy` property:

* `catalogs` (default, glue.md): the root namespace is the starting catalog (`catalog_id`, else
  the caller's account catalog). The children of any catalog-level namespace, the root included,
  are its child catalogs (GetCatalogs with ParentCatalogId) and its databases (GetDatabases);
  databases are leaves holding the tables. `["sales", "orders"]` is database `orders` of child
  catalog `sales`, `["orders"]` a database of the root catalog.
* `databases`: single-catalog mode. Namespaces are the databases of the starting catalog and
  nothing else, which is how most accounts and Glue-compatible metastores look (no catalog API).

The modules, along their seams: `errors` (botocore errors → namespace errors), `session`
(settings, credentials, clients), `names` (Glue names and what a path names), `catalog` (reads
and resolution by namespace path), `tables` (Glue tables as Lance tables) and `namespace` (the
operations).
"""

from backends.glue.namespace import GlueNamespace
from backends.glue.settings import GlueSettings

__all__ = ["GlueNamespace", "GlueSettings"]
