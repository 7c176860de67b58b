"""What API Gateway hands the service and expects back: the v2 event (headers, body,
the identity the authorizer verified), responses, allowed origins and hosts, and the
authentication every route starts with."""
