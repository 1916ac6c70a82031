"""The values every layer shares, app/ and the backends alike: identifiers and names, request
modes, paging, the extension models, Arrow schemas as JSON, storage locations, properties and
the credentials among them, access grants, the table marker, and backend settings with their
error. Nothing here knows HTTP or any one catalog."""
