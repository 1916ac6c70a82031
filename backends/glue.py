"""AWS Glue Data Catalog backend (`--impl glue`), on boto3.

Two namespace layouts, chosen by the `hierarchy` property:

* `catalogs` (default, glue.md): the root namespace is the starting catalog (`catalog_id`, else
  the caller's account catalog). The children of any catalog-level namespace, the root included,
  are its child catalogs (GetCatalogs with ParentCatalogId) and its databases (GetDatabases);
  databases are leaves holding the tables. `["sales", "orders"]` is database `orders` of child
  catalog `sales`, `["orders"]` a database of the root catalog.
* `databases`: single-catalog mode. Namespaces are the databases of the starting catalog and
  nothing else, which is how most accounts and Glue-compatible metastores look (no catalog API).

Only metadata lives here; the generic data operations of `backends.data` write the Lance data at
the location that `declare_table` / `describe_table` return.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
import botocore.session
from botocore.config import Config
from botocore.credentials import (
    CredentialProvider,
    CredentialResolver,
    DeferredRefreshableCredentials,
    RefreshableCredentials,
)
from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    CredentialRetrievalError,
    HTTPClientError,
    NoCredentialsError,
    NoRegionError,
    ParamValidationError,
    PartialCredentialsError,
)
from botocore.exceptions import (
    ConnectionError as BotoConnectionError,
)
from lance_namespace import (
    ConcurrentModificationError,
    CreateNamespaceRequest,
    CreateNamespaceResponse,
    DeclareTableRequest,
    DeclareTableResponse,
    DeregisterTableRequest,
    DeregisterTableResponse,
    DescribeNamespaceRequest,
    DescribeNamespaceResponse,
    DescribeTableRequest,
    DescribeTableResponse,
    DropNamespaceRequest,
    DropNamespaceResponse,
    InternalError,
    InvalidInputError,
    LanceNamespaceError,
    ListNamespacesRequest,
    ListNamespacesResponse,
    ListTablesRequest,
    ListTablesResponse,
    NamespaceAlreadyExistsError,
    NamespaceExistsRequest,
    NamespaceExistsResponse,
    NamespaceNotEmptyError,
    NamespaceNotFoundError,
    PermissionDeniedError,
    RegisterTableRequest,
    RegisterTableResponse,
    RenameTableRequest,
    RenameTableResponse,
    ServiceUnavailableError,
    TableAlreadyExistsError,
    TableExistsRequest,
    TableExistsResponse,
    TableNotFoundError,
    ThrottlingError,
    UnauthenticatedError,
    UnsupportedOperationError,
)

from backends.base import MetadataNamespace
from backends.catalog_operations import PropertyChanges, page_of_table_ids
from backends.conventions import (
    EXTERNAL_TABLE,
    LANCE_TABLE_TYPE,
    TABLE_TYPE_KEY,
    has_lance_table_type,
    join_location,
    require_lance_table,
    storage_root,
)
from backends.extensions import (
    AlterNamespaceRequest,
    AlterNamespaceResponse,
    AlterTableRequest,
    AlterTableResponse,
)
from backends.modes import CreateMode, DropBehavior, DropMode, RegisterMode, parse_mode
from backends.names import require_object_identifier, validate_identifier, validate_name
from backends.paging import paginate
from backends.properties import (
    ConfigurationError,
    float_property,
    int_property,
    storage_options,
)

HIERARCHY_CATALOGS = "catalogs"
HIERARCHY_DATABASES = "databases"
# Reserved CreateNamespace property choosing what to create in `catalogs` mode; not stored.
NAMESPACE_TYPE_PROPERTY = "glue.namespace_type"
MAX_GLUE_NAME_LENGTH = 255
MAX_PARAMETER_KEY_LENGTH = 255
MAX_MESSAGE_LENGTH = 500  # of Glue's error text in ours (some servers send whole HTML pages)
DEFAULT_SESSION_NAME = "lance-namespace-adapter"
DEFAULT_ROLE_DURATION_SEC = 3600
MIN_ROLE_DURATION_SEC = 900
MAX_ROLE_DURATION_SEC = 43200

# Glue lowercases names it stores, so anything else would not round-trip.
_GLUE_NAME = re.compile(r"[a-z0-9_][a-z0-9_-]*")

_XML_ERROR_CODE = re.compile(r"<Code>([^<]+)</Code>")
_NOT_FOUND_CODES = {"EntityNotFoundException"}
_ALREADY_EXISTS_CODES = {"AlreadyExistsException", "FederatedResourceAlreadyExistsException"}
_INVALID_INPUT_CODES = {
    "InvalidInputException",
    "ValidationException",
    "InvalidParameterValue",
    "InvalidParameterValueException",
    "ResourceNumberLimitExceededException",
}
_PERMISSION_CODES = {"AccessDeniedException", "AccessDenied"}
_UNAUTHENTICATED_CODES = {
    "UnrecognizedClientException",
    "InvalidClientTokenId",
    "SignatureDoesNotMatch",
    "InvalidSignatureException",
    "IncompleteSignature",
    "ExpiredToken",
    "ExpiredTokenException",
    "MissingAuthenticationToken",
    "AuthFailure",
    "NotAuthorized",
}
_THROTTLING_CODES = {
    "ThrottlingException",
    "Throttling",
    "TooManyRequestsException",
    "RequestLimitExceeded",
    "SlowDown",
}
_UNAVAILABLE_CODES = {
    "InternalServiceException",
    "InternalFailure",
    "InternalError",
    "ServiceUnavailable",
    "ServiceUnavailableException",
    "OperationTimeoutException",
}


# ---------------------------------------------------------------------------------------------
# Error mapping: the one place where Glue/STS/botocore errors become namespace errors.


@contextmanager
def glue_errors(
    subject: str,
    not_found: type[LanceNamespaceError] = NamespaceNotFoundError,
    already_exists: type[LanceNamespaceError] = NamespaceAlreadyExistsError,
) -> Iterator[None]:
    """Translate errors raised inside the block; `subject` names the object for messages."""
    try:
        yield
    except ClientError as error:
        raise translate_client_error(error, subject, not_found, already_exists) from error
    except (BotoConnectionError, HTTPClientError) as error:
        raise ServiceUnavailableError(f"Glue endpoint unreachable: {error}") from error
    except (NoCredentialsError, PartialCredentialsError, CredentialRetrievalError) as error:
        raise UnauthenticatedError(f"no usable AWS credentials: {error}") from error
    except ParamValidationError as error:
        raise InvalidInputError(f"invalid Glue request for {subject}: {error}") from error
    except BotoCoreError as error:
        raise InternalError(f"Glue client error for {subject}: {error}") from error


def translate_client_error(
    error: ClientError,
    subject: str,
    not_found: type[LanceNamespaceError],
    already_exists: type[LanceNamespaceError],
) -> LanceNamespaceError:
    details = error.response.get("Error", {})
    code = error_code(details)
    message = f"{subject}: {str(details.get('Message') or code)[:MAX_MESSAGE_LENGTH]}"
    status = int(error.response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 0)
    if code in _NOT_FOUND_CODES:
        return not_found(f"{subject} not found")
    if code in _ALREADY_EXISTS_CODES:
        return already_exists(f"{subject} already exists")
    if code in _INVALID_INPUT_CODES:
        return InvalidInputError(message)
    if code in _PERMISSION_CODES:
        return PermissionDeniedError(message)
    if code in _UNAUTHENTICATED_CODES:
        return UnauthenticatedError(message)
    if code in _THROTTLING_CODES:
        return ThrottlingError(message)
    if code == "ConcurrentModificationException":
        return ConcurrentModificationError(message)
    if code in _UNAVAILABLE_CODES or status >= 500:
        return ServiceUnavailableError(message)
    return _error_for_status(status, message) or InternalError(
        f"unexpected Glue error {code or status}: {message}"
    )


def error_code(details: Mapping[str, Any]) -> str:
    """The error code; Glue-compatible servers answering in the XML error format leave
    botocore's JSON parser without one, so read it from the body then."""
    code = str(details.get("Code") or "")
    if code and not code.isdigit():
        return code
    found = _XML_ERROR_CODE.search(str(details.get("Message") or ""))
    return found.group(1) if found else code


def _error_for_status(status: int, message: str) -> LanceNamespaceError | None:
    by_status: dict[int, type[LanceNamespaceError]] = {
        401: UnauthenticatedError,
        403: PermissionDeniedError,
        429: ThrottlingError,
    }
    error_type = by_status.get(status)
    return error_type(message) if error_type else None


# ---------------------------------------------------------------------------------------------
# Names, identifiers, parameters.


def validate_glue_name(name: str, kind: str) -> str:
    """Glue's rules on top of the generic ones: lowercase letters, digits, `_`, `-`; <= 255."""
    validate_name(name, kind)
    if len(name) > MAX_GLUE_NAME_LENGTH:
        raise InvalidInputError(f"{kind} {name!r} is longer than {MAX_GLUE_NAME_LENGTH} characters")
    if not _GLUE_NAME.fullmatch(name):
        raise InvalidInputError(
            f"{kind} {name!r} is not a valid Glue name: use lowercase letters, digits, '_' or '-'"
        )
    return name


def glue_identifier(parts: list[str] | None, kind: str) -> list[str]:
    validated = validate_identifier(parts, f"{kind} identifier")
    return [validate_glue_name(part, f"{kind} name") for part in validated]


def validate_parameters(properties: Mapping[str, str] | None) -> dict[str, str]:
    parameters = dict(properties or {})
    for key, value in parameters.items():
        if not isinstance(key, str) or not key or len(key) > MAX_PARAMETER_KEY_LENGTH:
            raise InvalidInputError(f"property key {key!r} must be 1 to 255 characters")
        if not isinstance(value, str):
            raise InvalidInputError(f"property {key!r} must have a string value")
    return parameters


def is_lance_table(table: Mapping[str, Any]) -> bool:
    return str(table.get("TableType", "")).upper() == EXTERNAL_TABLE and has_lance_table_type(
        table.get("Parameters")
    )


def child_catalog_id(parent_id: str, name: str) -> str:
    """Glue child catalog IDs: `<account>:<name>`, nested ones `<account>:<parent>/<name>`."""
    separator = "/" if ":" in parent_id else ":"
    return f"{parent_id}{separator}{name}"


# ---------------------------------------------------------------------------------------------
# Configuration and boto3 clients.


@dataclass(frozen=True)
class GlueSettings:
    catalog_id: str | None
    endpoint: str | None
    sts_endpoint: str | None
    region: str | None
    hierarchy: str
    root: str
    storage: dict[str, str]
    connect_timeout: float
    read_timeout: float
    max_attempts: int
    max_pool_connections: int

    @classmethod
    def from_properties(cls, properties: Mapping[str, str]) -> GlueSettings:
        hierarchy = (properties.get("hierarchy") or HIERARCHY_CATALOGS).strip().lower()
        if hierarchy not in (HIERARCHY_CATALOGS, HIERARCHY_DATABASES):
            raise ConfigurationError(
                f"property 'hierarchy' must be '{HIERARCHY_CATALOGS}' or "
                f"'{HIERARCHY_DATABASES}', got {hierarchy!r}"
            )
        settings = cls(
            catalog_id=properties.get("catalog_id") or None,
            endpoint=properties.get("endpoint") or None,
            sts_endpoint=properties.get("sts_endpoint") or None,
            region=properties.get("region") or None,
            hierarchy=hierarchy,
            root=storage_root(properties.get("root")),
            storage=storage_options(properties),
            connect_timeout=float_property(properties, "client.connect_timeout_sec", 5.0),
            read_timeout=float_property(properties, "client.read_timeout_sec", 30.0),
            max_attempts=int_property(properties, "client.max_attempts", 3),
            max_pool_connections=int_property(properties, "client.max_pool_connections", 10),
        )
        settings.check()
        return settings

    def check(self) -> None:
        if self.connect_timeout <= 0 or self.read_timeout <= 0:
            raise ConfigurationError("client timeouts must be positive")
        if self.max_attempts < 1 or self.max_pool_connections < 1:
            raise ConfigurationError("client.max_attempts and max_pool_connections must be >= 1")

    def client_config(self, region: str | None) -> Config:
        return Config(
            region_name=region,
            connect_timeout=self.connect_timeout,
            read_timeout=self.read_timeout,
            retries={"total_max_attempts": self.max_attempts, "mode": "standard"},
            max_pool_connections=self.max_pool_connections,
        )


class _FixedCredentialProvider(CredentialProvider):
    """Hands botocore one credentials object (here: refreshable assumed-role credentials)."""

    METHOD = "assume-role"

    def __init__(self, credentials: RefreshableCredentials) -> None:
        super().__init__()
        self._credentials = credentials

    def load(self) -> RefreshableCredentials:
        return self._credentials


def static_session(properties: Mapping[str, str], region: str | None) -> boto3.Session:
    """Static or session credentials when given, else the default provider chain."""
    access_key = properties.get("access_key_id") or None
    secret_key = properties.get("secret_access_key") or None
    token = properties.get("session_token") or None
    if bool(access_key) != bool(secret_key):
        raise ConfigurationError("access_key_id and secret_access_key must be set together")
    if token and not access_key:
        raise ConfigurationError("session_token needs access_key_id and secret_access_key")
    return boto3.Session(
        aws_access_key_id=access_key,
        aws_secret_access_key=secret_key,
        aws_session_token=token,
        region_name=region,
    )


def assume_role_credentials(
    base: boto3.Session, properties: Mapping[str, str], settings: GlueSettings
) -> RefreshableCredentials:
    """Credentials of `assume_role_arn`, fetched again through STS before they expire."""
    duration = int_property(properties, "assume_role_timeout_sec", DEFAULT_ROLE_DURATION_SEC)
    if not MIN_ROLE_DURATION_SEC <= duration <= MAX_ROLE_DURATION_SEC:
        raise ConfigurationError(
            f"assume_role_timeout_sec must be between {MIN_ROLE_DURATION_SEC} and "
            f"{MAX_ROLE_DURATION_SEC}, got {duration}"
        )
    request = {
        "RoleArn": properties["assume_role_arn"],
        "RoleSessionName": properties.get("assume_role_session_name") or DEFAULT_SESSION_NAME,
        "DurationSeconds": duration,
    }
    if properties.get("assume_role_external_id"):
        request["ExternalId"] = properties["assume_role_external_id"]
    region = properties.get("assume_role_region") or settings.region or base.region_name
    sts = base.client(
        "sts", endpoint_url=settings.sts_endpoint, config=settings.client_config(region)
    )

    def fetch() -> dict[str, str]:
        credentials = sts.assume_role(**request)["Credentials"]
        return {
            "access_key": credentials["AccessKeyId"],
            "secret_key": credentials["SecretAccessKey"],
            "token": credentials["SessionToken"],
            "expiry_time": credentials["Expiration"].isoformat(),
        }

    # Fetched on first use, so a slow or failing STS surfaces per request (mapped by
    # glue_errors around the Glue call) instead of preventing the adapter from starting.
    return DeferredRefreshableCredentials(refresh_using=fetch, method="assume-role")


def build_session(properties: Mapping[str, str], settings: GlueSettings) -> boto3.Session:
    base = static_session(properties, settings.region)
    if not properties.get("assume_role_arn"):
        return base
    credentials = assume_role_credentials(base, properties, settings)
    core = botocore.session.get_session()
    core.register_component(
        "credential_provider", CredentialResolver([_FixedCredentialProvider(credentials)])
    )
    return boto3.Session(botocore_session=core, region_name=settings.region or base.region_name)


# ---------------------------------------------------------------------------------------------
# The backend.


@dataclass(frozen=True)
class DatabaseRef:
    """Where a database lives: `catalog_id` None means the caller's default catalog."""

    catalog_id: str | None
    name: str

    def params(self) -> dict[str, str]:
        return {"CatalogId": self.catalog_id} if self.catalog_id else {}

    def describe(self) -> str:
        return f"database '{self.name}'" + (
            f" in catalog {self.catalog_id}" if self.catalog_id else ""
        )


class GlueNamespace(MetadataNamespace):
    """Lance namespace on the AWS Glue Data Catalog (metadata only)."""

    def __init__(self, **properties: str) -> None:
        self._settings = GlueSettings.from_properties(properties)
        self._session = build_session(properties, self._settings)
        region = self._settings.region or self._session.region_name
        if not region:
            raise ConfigurationError("no AWS region: set the 'region' property or AWS_REGION")
        self._region = region
        try:
            self._glue = self._session.client(
                "glue",
                endpoint_url=self._settings.endpoint,
                config=self._settings.client_config(region),
            )
        except (NoRegionError, ValueError) as error:
            raise ConfigurationError(f"cannot build the Glue client: {error}") from error
        self._account_id: str | None = None

    def storage_root(self) -> str:
        return self._settings.root

    def namespace_id(self) -> str:
        settings = self._settings
        return (
            f"GlueNamespace {{ catalog_id: {settings.catalog_id or 'default'}, "
            f"region: {self._region}, endpoint: {settings.endpoint or 'aws'}, "
            f"hierarchy: {settings.hierarchy} }}"
        )

    @property
    def session(self) -> boto3.Session:
        """The boto3 session whose (possibly refreshing) credentials sign every call."""
        return self._session

    @property
    def glue_client(self) -> Any:
        """The bounded boto3 Glue client this backend calls."""
        return self._glue

    @property
    def _catalogs_enabled(self) -> bool:
        return self._settings.hierarchy == HIERARCHY_CATALOGS

    # -- catalog ids ---------------------------------------------------------------------------

    def _root_catalog_id(self) -> str:
        """The starting catalog's ID; the caller's account catalog when not configured."""
        return self._settings.catalog_id or self._caller_account()

    def _caller_account(self) -> str:
        """The caller's account ID, asked once from STS GetCallerIdentity."""
        if self._account_id is None:
            sts = self._session.client(
                "sts",
                endpoint_url=self._settings.sts_endpoint,
                config=self._settings.client_config(self._region),
            )
            with glue_errors("caller identity"):
                self._account_id = str(sts.get_caller_identity()["Account"])
        return self._account_id

    def _catalog_id_for(self, path: list[str]) -> str | None:
        """The ID of the catalog at `path` below the root; None = default catalog (omit)."""
        return self._nested_catalog_id(path) if path else self._settings.catalog_id

    def _nested_catalog_id(self, path: list[str]) -> str:
        catalog_id = self._root_catalog_id()
        for name in path:
            catalog_id = child_catalog_id(catalog_id, name)
        return catalog_id

    def _database_ref(self, namespace: list[str]) -> DatabaseRef:
        """The database a table namespace names (its last part; the rest are catalogs)."""
        if not namespace:
            raise InvalidInputError("tables live in a database, not in the root namespace")
        if not self._catalogs_enabled and len(namespace) > 1:
            raise NamespaceNotFoundError(
                f"namespace {'$'.join(namespace)} not found (hierarchy=databases has one level)"
            )
        return DatabaseRef(self._catalog_id_for(namespace[:-1]), namespace[-1])

    # -- paged Glue reads ---------------------------------------------------------------------

    def _all_pages(self, operation: str, list_key: str, **params: Any) -> list[dict[str, Any]]:
        """Every item of a paged Glue list call, following NextToken to the end."""
        call: Callable[..., dict[str, Any]] = getattr(self._glue, operation)
        items: list[dict[str, Any]] = []
        token: str | None = None
        while True:
            response = call(**params, **({"NextToken": token} if token else {}))
            items.extend(response.get(list_key) or [])
            next_token = response.get("NextToken")
            if not next_token or next_token == token:
                return items
            token = next_token

    def _get_database(self, ref: DatabaseRef) -> dict[str, Any] | None:
        try:
            with glue_errors(ref.describe()):
                return self._glue.get_database(Name=ref.name, **ref.params())["Database"]
        except NamespaceNotFoundError:
            return None

    def _get_catalog(self, catalog_id: str) -> dict[str, Any] | None:
        try:
            with glue_errors(f"catalog {catalog_id}"):
                return self._glue.get_catalog(CatalogId=catalog_id)["Catalog"]
        except NamespaceNotFoundError:
            return None

    def _child_catalogs(self, catalog_id: str | None) -> list[dict[str, Any]]:
        params = {"ParentCatalogId": catalog_id} if catalog_id else {}
        with glue_errors(f"catalog {catalog_id or 'default'}"):
            return self._all_pages("get_catalogs", "CatalogList", Recursive=False, **params)

    def _databases(self, catalog_id: str | None) -> list[dict[str, Any]]:
        params = {"CatalogId": catalog_id} if catalog_id else {}
        with glue_errors(f"catalog {catalog_id or 'default'}"):
            return self._all_pages("get_databases", "DatabaseList", **params)

    def _tables(self, ref: DatabaseRef) -> list[dict[str, Any]]:
        with glue_errors(ref.describe()):
            return self._all_pages("get_tables", "TableList", DatabaseName=ref.name, **ref.params())

    # -- namespace resolution -----------------------------------------------------------------

    def _resolve(self, namespace: list[str]) -> tuple[str, Any]:
        """('root', None), ('database', DatabaseRef + Database) or ('catalog', id + Catalog)."""
        if not namespace:
            return "root", None
        if not self._catalogs_enabled and len(namespace) > 1:
            raise NamespaceNotFoundError(f"namespace {'$'.join(namespace)} not found")
        ref = DatabaseRef(self._catalog_id_for(namespace[:-1]), namespace[-1])
        database = self._get_database(ref)
        if database is not None:
            return "database", (ref, database)
        if self._catalogs_enabled:
            catalog_id = self._nested_catalog_id(namespace)
            catalog = self._get_catalog(catalog_id)
            if catalog is not None:
                return "catalog", (catalog_id, catalog)
        raise NamespaceNotFoundError(f"namespace {'$'.join(namespace)} not found")

    def _require_catalog(self, path: list[str]) -> str | None:
        """The ID of the catalog at `path` (which must exist); root needs no check."""
        if not path:
            return self._settings.catalog_id
        kind, found = self._resolve(path)
        if kind != "catalog":
            raise NamespaceNotFoundError(f"catalog {'$'.join(path)} not found")
        return found[0]

    def _children(self, namespace: list[str]) -> list[str]:
        kind, found = self._resolve(namespace)
        if kind == "database":
            return []  # databases are leaves
        catalog_id = self._settings.catalog_id if kind == "root" else found[0]
        names = [database["Name"] for database in self._databases(catalog_id)]
        if self._catalogs_enabled:
            names += [catalog["Name"] for catalog in self._child_catalogs(catalog_id)]
        return names

    # -- namespace operations -----------------------------------------------------------------

    def list_namespaces(self, request: ListNamespacesRequest) -> ListNamespacesResponse:
        namespace = glue_identifier(request.id, "namespace")
        page, token = paginate(self._children(namespace), request.page_token, request.limit)
        return ListNamespacesResponse(namespaces=page, page_token=token)

    def readiness_probe(self) -> None:
        """/readyz: one database of the catalog, a call Glue answers in either hierarchy."""
        catalog = DatabaseRef(self._settings.catalog_id, "")
        with glue_errors("catalog"):
            self._glue.get_databases(MaxResults=1, **catalog.params())

    def describe_namespace(self, request: DescribeNamespaceRequest) -> DescribeNamespaceResponse:
        kind, found = self._resolve(glue_identifier(request.id, "namespace"))
        if kind == "root":
            return DescribeNamespaceResponse(properties={})
        return DescribeNamespaceResponse(properties=dict(found[1].get("Parameters") or {}))

    def namespace_exists(self, request: NamespaceExistsRequest) -> NamespaceExistsResponse:
        self._resolve(glue_identifier(request.id, "namespace"))
        return NamespaceExistsResponse()

    def create_namespace(self, request: CreateNamespaceRequest) -> CreateNamespaceResponse:
        namespace = glue_identifier(request.id, "namespace")
        if not namespace:
            raise NamespaceAlreadyExistsError("the root namespace always exists")
        parameters = validate_parameters(request.properties)
        namespace_type = parameters.pop(NAMESPACE_TYPE_PROPERTY, "database").strip().lower()
        if namespace_type not in ("database", "catalog"):
            raise InvalidInputError(f"{NAMESPACE_TYPE_PROPERTY} must be 'database' or 'catalog'")
        mode = parse_mode(request.mode, CreateMode, CreateMode.CREATE)
        if namespace_type == "catalog" and not self._catalogs_enabled:
            raise InvalidInputError("catalogs need hierarchy=catalogs")
        if not self._catalogs_enabled and len(namespace) > 1:
            raise InvalidInputError("hierarchy=databases has a single namespace level")
        parent_id = self._require_catalog(namespace[:-1])
        existing = self._find(namespace)
        if existing is not None:
            return self._on_existing(namespace, existing, mode, namespace_type, parameters)
        if namespace_type == "catalog":
            self._create_catalog(namespace, parameters)
        else:
            ref = DatabaseRef(parent_id, namespace[-1])
            with glue_errors(ref.describe()):
                self._glue.create_database(
                    DatabaseInput={"Name": ref.name, "Parameters": parameters}, **ref.params()
                )
        return CreateNamespaceResponse(properties=parameters)

    def _find(self, namespace: list[str]) -> tuple[str, Any] | None:
        try:
            return self._resolve(namespace)
        except NamespaceNotFoundError:
            return None

    def _create_catalog(self, namespace: list[str], parameters: dict[str, str]) -> None:
        # CreateCatalog has no parent or catalog ID: Glue creates the catalog under the caller's
        # default catalog, which must therefore be our root.
        root = self._settings.catalog_id
        if len(namespace) != 1 or (root is not None and root != self._caller_account()):
            raise UnsupportedOperationError(
                "Glue creates catalogs only directly under the account's default catalog"
            )
        with glue_errors(f"catalog {namespace[0]}"):
            self._glue.create_catalog(Name=namespace[0], CatalogInput={"Parameters": parameters})

    def _on_existing(
        self,
        namespace: list[str],
        existing: tuple[str, Any],
        mode: str,
        namespace_type: str,
        parameters: dict[str, str],
    ) -> CreateNamespaceResponse:
        kind, found = existing
        name = "$".join(namespace)
        if mode == "create":
            raise NamespaceAlreadyExistsError(f"namespace {name} already exists")
        if mode == "overwrite" and kind != namespace_type:
            raise InvalidInputError(f"namespace {name} is a {kind}, not a {namespace_type}")
        if mode == CreateMode.EXIST_OK:
            return CreateNamespaceResponse(properties=dict(found[1].get("Parameters") or {}))
        # Overwrite = drop + create empty; done as one update so nothing is half-written, and
        # refused when there are children because dropping would unregister them.
        self._require_empty(kind, found, name)
        if kind == "database":
            ref, database = found
            database_input = {"Name": ref.name, "Parameters": parameters}
            if database.get("LocationUri"):
                database_input["LocationUri"] = database["LocationUri"]
            with glue_errors(ref.describe()):
                self._glue.update_database(
                    Name=ref.name, DatabaseInput=database_input, **ref.params()
                )
        else:
            with glue_errors(f"catalog {found[0]}"):
                self._glue.update_catalog(
                    CatalogId=found[0], CatalogInput={"Parameters": parameters}
                )
        return CreateNamespaceResponse(properties=parameters)

    def _require_empty(self, kind: str, found: Any, name: str) -> None:
        if kind == "database":
            ref = found[0]
            with glue_errors(ref.describe()):
                tables = self._glue.get_tables(DatabaseName=ref.name, MaxResults=1, **ref.params())
            if tables.get("TableList"):
                raise NamespaceNotEmptyError(f"namespace {name} still has tables")
            return
        catalog_id = found[0]
        if self._databases(catalog_id) or self._child_catalogs(catalog_id):
            raise NamespaceNotEmptyError(f"namespace {name} still has databases or catalogs")

    def drop_namespace(self, request: DropNamespaceRequest) -> DropNamespaceResponse:
        namespace = glue_identifier(request.id, "namespace")
        if not namespace:
            raise InvalidInputError("the root namespace cannot be dropped")
        mode = parse_mode(request.mode, DropMode, DropMode.FAIL)
        behavior = parse_mode(request.behavior, DropBehavior, DropBehavior.RESTRICT, "behavior")
        if behavior == "cascade":
            raise UnsupportedOperationError("the Glue backend only drops namespaces in RESTRICT")
        existing = self._find(namespace)
        if existing is None:
            if mode == "skip":
                return DropNamespaceResponse()
            raise NamespaceNotFoundError(f"namespace {'$'.join(namespace)} not found")
        kind, found = existing
        # DeleteDatabase would also unregister every table (of any format): refuse if any.
        self._require_empty(kind, found, "$".join(namespace))
        properties = dict(found[1].get("Parameters") or {})
        if kind == "database":
            ref = found[0]
            with glue_errors(ref.describe()):
                self._glue.delete_database(Name=ref.name, **ref.params())
        else:
            with glue_errors(f"catalog {found[0]}"):
                self._glue.delete_catalog(CatalogId=found[0])
        return DropNamespaceResponse(properties=properties)

    # -- table operations ---------------------------------------------------------------------

    def _split_table_id(self, parts: list[str] | None) -> tuple[list[str], str, DatabaseRef]:
        identifier = require_object_identifier(parts, "table")
        identifier = [validate_glue_name(part, "name") for part in identifier]
        namespace, table = identifier[:-1], identifier[-1]
        return namespace, table, self._database_ref(namespace)

    def _require_database(self, ref: DatabaseRef, namespace: list[str]) -> dict[str, Any]:
        database = self._get_database(ref)
        if database is None:
            raise NamespaceNotFoundError(f"namespace {'$'.join(namespace)} not found")
        return database

    def _get_table(self, ref: DatabaseRef, table: str, namespace: list[str]) -> dict[str, Any]:
        """The Glue table; NamespaceNotFound / TableNotFound tell which level is missing."""
        try:
            with glue_errors(f"table {table}", not_found=TableNotFoundError):
                return self._glue.get_table(DatabaseName=ref.name, Name=table, **ref.params())[
                    "Table"
                ]
        except TableNotFoundError:
            self._require_database(ref, namespace)
            raise

    def _get_lance_table(self, ref: DatabaseRef, table: str, namespace: list[str]) -> dict:
        glue_table = self._get_table(ref, table, namespace)
        if not is_lance_table(glue_table):
            raise InvalidInputError(f"table {'$'.join([*namespace, table])} is not a Lance table")
        return glue_table

    def list_tables(self, request: ListTablesRequest) -> ListTablesResponse:
        namespace = glue_identifier(request.id, "namespace")
        if not namespace:
            return ListTablesResponse(tables=[])  # tables live in databases, never in the root
        ref = self._database_ref(namespace)
        try:
            tables = self._tables(ref)
        except NamespaceNotFoundError:
            if self._resolve(namespace)[0] == "catalog":
                return ListTablesResponse(tables=[])  # catalogs hold no tables directly
            raise
        names = self._lance_table_names(tables, request.include_declared)
        page, token = paginate(names, request.page_token, request.limit)
        return ListTablesResponse(tables=page, page_token=token)

    def _lance_table_names(
        self, tables: list[dict[str, Any]], include_declared: bool | None
    ) -> list[str]:
        lance_tables = [table for table in tables if is_lance_table(table)]
        if include_declared is False:
            # Only tables with data: this opens every table, so it is only done when asked.
            lance_tables = [table for table in lance_tables if self._has_data(table)]
        return [table["Name"] for table in lance_tables]

    def _has_data(self, glue_table: Mapping[str, Any]) -> bool:
        location = (glue_table.get("StorageDescriptor") or {}).get("Location")
        if not location:
            return False
        try:
            require_lance_table(location, self._storage_options())
        except InvalidInputError:
            return False
        return True

    def declare_table(self, request: DeclareTableRequest) -> DeclareTableResponse:
        namespace, table, ref = self._split_table_id(request.id)
        parameters = self._lance_parameters(request.properties)
        database = self._require_database(ref, namespace)
        location = request.location or self._default_location(database, namespace, table)
        self._create_table(ref, self._table_input(table, location, parameters), namespace)
        return DeclareTableResponse(
            location=location, storage_options=self._storage_options(), properties=parameters
        )

    def register_table(self, request: RegisterTableRequest) -> RegisterTableResponse:
        namespace, table, ref = self._split_table_id(request.id)
        if not request.location or not request.location.strip():
            raise InvalidInputError("register_table needs a location")
        mode = parse_mode(request.mode, RegisterMode, RegisterMode.CREATE)
        parameters = self._lance_parameters(request.properties)
        self._require_database(ref, namespace)
        require_lance_table(request.location, self._storage_options())
        existing = self._table_if_exists(ref, table) if mode == "overwrite" else None
        if existing is None:
            table_input = self._table_input(table, request.location, parameters)
            self._create_table(ref, table_input, namespace)
        elif not is_lance_table(existing):
            raise InvalidInputError(f"table {'$'.join(request.id or [])} is not a Lance table")
        else:
            with glue_errors(f"table {table}", not_found=TableNotFoundError):
                self._glue.update_table(
                    DatabaseName=ref.name,
                    TableInput=self._table_input(table, request.location, parameters),
                    **ref.params(),
                )
        return RegisterTableResponse(location=request.location, properties=parameters)

    def _table_if_exists(self, ref: DatabaseRef, table: str) -> dict[str, Any] | None:
        try:
            with glue_errors(f"table {table}", not_found=TableNotFoundError):
                return self._glue.get_table(DatabaseName=ref.name, Name=table, **ref.params())[
                    "Table"
                ]
        except TableNotFoundError:
            return None

    def describe_table_entry(self, request: DescribeTableRequest) -> DescribeTableResponse:
        namespace, table, ref = self._split_table_id(request.id)
        glue_table = self._get_lance_table(ref, table, namespace)
        location = self._table_location(glue_table, namespace, table)
        return DescribeTableResponse(
            location=location,
            table_uri=table_uri(location) if request.with_table_uri else None,
            storage_options=self._storage_options(),
            properties=dict(glue_table.get("Parameters") or {}),
        )

    def table_exists(self, request: TableExistsRequest) -> TableExistsResponse:
        namespace, table, ref = self._split_table_id(request.id)
        glue_table = self._get_table(ref, table, namespace)
        if not is_lance_table(glue_table):
            raise TableNotFoundError(f"table {'$'.join([*namespace, table])} is not a Lance table")
        return TableExistsResponse()

    def deregister_table(self, request: DeregisterTableRequest) -> DeregisterTableResponse:
        namespace, table, ref = self._split_table_id(request.id)
        glue_table = self._get_lance_table(ref, table, namespace)
        # DeleteTable only removes the Glue entry; the Lance data stays where it is.
        with glue_errors(f"table {table}", not_found=TableNotFoundError):
            self._glue.delete_table(DatabaseName=ref.name, Name=table, **ref.params())
        return DeregisterTableResponse(
            id=[*namespace, table],
            location=self._table_location(glue_table, namespace, table),
            properties=dict(glue_table.get("Parameters") or {}),
        )

    # -- catalog-level operations -------------------------------------------------------------

    def rename_table(self, request: RenameTableRequest) -> RenameTableResponse:
        """Glue has no rename: create the new entry, then delete the old one (undone if that
        fails). The data stays at its location."""
        namespace, table, ref = self._split_table_id(request.id)
        new_name = validate_glue_name(request.new_table_name, "new table name")
        target_namespace = namespace
        if request.new_namespace_id is not None:
            target_namespace = glue_identifier(request.new_namespace_id, "namespace")
        target_ref = self._database_ref(target_namespace)
        glue_table = self._get_lance_table(ref, table, namespace)
        table_input = {**self._writable("Table", "TableInput", glue_table), "Name": new_name}
        self._create_table(target_ref, table_input, target_namespace)
        try:
            with glue_errors(f"table {'$'.join(request.id or [])}", not_found=TableNotFoundError):
                self._glue.delete_table(DatabaseName=ref.name, Name=table, **ref.params())
        except LanceNamespaceError as error:
            self._undo_create(target_ref, [*target_namespace, new_name], error)
            raise
        return RenameTableResponse()

    def _undo_create(self, ref: DatabaseRef, table_id: list[str], cause: Exception) -> None:
        try:
            with glue_errors(f"table {'$'.join(table_id)}", not_found=TableNotFoundError):
                self._glue.delete_table(DatabaseName=ref.name, Name=table_id[-1], **ref.params())
        except LanceNamespaceError as undo_error:
            raise InternalError(
                f"rename failed ({cause}) and its new entry {'$'.join(table_id)} could not be"
                f" removed ({undo_error}): both entries now name the same data"
            ) from cause

    def alter_namespace(self, request: AlterNamespaceRequest) -> AlterNamespaceResponse:
        namespace = glue_identifier(request.id, "namespace")
        changes = PropertyChanges.of(
            request.set_properties,
            request.unset_properties,
            (NAMESPACE_TYPE_PROPERTY,),
            "only choose what CreateNamespace creates",
        )
        validate_parameters(changes.updates)
        kind, found = self._resolve(namespace)
        if kind == "root":
            raise InvalidInputError("the root namespace has no properties to alter")
        if kind == "database":
            ref, database = found
            database_input = self._writable("Database", "DatabaseInput", database)
            database_input["Parameters"] = changes.applied_to(database.get("Parameters"))
            with glue_errors(ref.describe()):
                self._glue.update_database(
                    Name=ref.name, DatabaseInput=database_input, **ref.params()
                )
        else:
            catalog_id, catalog = found
            catalog_input = self._writable("Catalog", "CatalogInput", catalog)
            catalog_input["Parameters"] = changes.applied_to(catalog.get("Parameters"))
            with glue_errors(f"catalog {catalog_id}"):
                self._glue.update_catalog(CatalogId=catalog_id, CatalogInput=catalog_input)
        described = self.describe_namespace(DescribeNamespaceRequest(id=namespace))
        return AlterNamespaceResponse(properties=described.properties)

    def alter_table(self, request: AlterTableRequest) -> AlterTableResponse:
        namespace, table, ref = self._split_table_id(request.id)
        changes = PropertyChanges.of(
            request.set_properties, request.unset_properties, (TABLE_TYPE_KEY,)
        )
        validate_parameters(changes.updates)
        glue_table = self._get_lance_table(ref, table, namespace)
        table_input = self._writable("Table", "TableInput", glue_table)
        table_input["Parameters"] = changes.applied_to(glue_table.get("Parameters"))
        with glue_errors(f"table {'$'.join(request.id or [])}", not_found=TableNotFoundError):
            self._glue.update_table(DatabaseName=ref.name, TableInput=table_input, **ref.params())
        altered = self._get_lance_table(ref, table, namespace)
        return AlterTableResponse(properties=dict(altered.get("Parameters") or {}))

    def list_all_tables(self, request: ListTablesRequest) -> ListTablesResponse:
        page, token = page_of_table_ids(
            self._database_paths([], self._settings.catalog_id),
            lambda namespace: self._listed_tables(namespace, request.include_declared),
            request.page_token,
            request.limit,
        )
        return ListTablesResponse(tables=page, page_token=token)

    def _database_paths(self, path: list[str], catalog_id: str | None) -> list[list[str]]:
        """Every database at or below the catalog at `path`, as namespace paths."""
        paths = [[*path, database["Name"]] for database in self._databases(catalog_id)]
        if self._catalogs_enabled:
            for catalog in self._child_catalogs(catalog_id):
                child = [*path, catalog["Name"]]
                paths += self._database_paths(child, self._nested_catalog_id(child))
        return paths

    def _listed_tables(self, namespace: list[str], include_declared: bool | None) -> list[str]:
        try:
            tables = self._tables(self._database_ref(namespace))
        except NamespaceNotFoundError:
            return []  # dropped since it was listed
        return self._lance_table_names(tables, include_declared)

    def _writable(
        self, read_shape: str, write_shape: str, current: Mapping[str, Any]
    ) -> dict[str, Any]:
        """The fields of a Glue object as read (`read_shape`) that its update input
        (`write_shape`) takes unchanged: Update* replaces the whole object, so every field
        that is not carried over would be lost."""
        model = self._glue.meta.service_model
        read = model.shape_for(read_shape).members
        write = model.shape_for(write_shape).members
        return {
            key: value
            for key, value in current.items()
            if value is not None and key in write and key in read
            and read[key].name == write[key].name
        }

    # -- table helpers ------------------------------------------------------------------------

    def _lance_parameters(self, properties: Mapping[str, str] | None) -> dict[str, str]:
        parameters = validate_parameters(properties)
        declared_type = parameters.get(TABLE_TYPE_KEY, LANCE_TABLE_TYPE)
        if declared_type.lower() != LANCE_TABLE_TYPE:
            raise InvalidInputError(f"property {TABLE_TYPE_KEY} must be '{LANCE_TABLE_TYPE}'")
        return {**parameters, TABLE_TYPE_KEY: LANCE_TABLE_TYPE}

    @staticmethod
    def _table_input(table: str, location: str, parameters: dict[str, str]) -> dict[str, Any]:
        return {
            "Name": table,
            "TableType": EXTERNAL_TABLE,
            "Parameters": parameters,
            "StorageDescriptor": {"Location": location},
        }

    def _create_table(
        self, ref: DatabaseRef, table_input: dict[str, Any], namespace: list[str]
    ) -> None:
        try:
            with glue_errors(
                f"table {'$'.join([*namespace, table_input['Name']])}",
                not_found=NamespaceNotFoundError,
                already_exists=TableAlreadyExistsError,
            ):
                self._glue.create_table(
                    DatabaseName=ref.name, TableInput=table_input, **ref.params()
                )
        except NamespaceNotFoundError:
            raise NamespaceNotFoundError(f"namespace {'$'.join(namespace)} not found") from None

    def _default_location(
        self, database: Mapping[str, Any], namespace: list[str], table: str
    ) -> str:
        """Under the database's LocationUri when it has one, else `<root>/<namespace…>/`."""
        database_location = database.get("LocationUri")
        if database_location:
            return join_location(database_location, f"{table}.lance")
        return join_location(self._settings.root, *namespace, f"{table}.lance")

    @staticmethod
    def _table_location(glue_table: Mapping[str, Any], namespace: list[str], table: str) -> str:
        location = (glue_table.get("StorageDescriptor") or {}).get("Location")
        if not location:
            raise InvalidInputError(f"table {'$'.join([*namespace, table])} has no location")
        return location

    def _storage_options(self) -> dict[str, str]:
        return dict(self._settings.storage)


def table_uri(location: str) -> str:
    if "://" in location:
        return location
    return Path(location).absolute().as_uri()


__all__ = ["GlueNamespace"]
