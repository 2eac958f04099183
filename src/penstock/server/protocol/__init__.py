"""The PostgreSQL protocol: message framing, types on the wire, result rows, the extended protocol, parameters, SCRAM."""
