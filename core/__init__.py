"""Platform code every app shares and none owns (see docs/architecture.md): registry names,
credentials, the outbound guard, throttling, permissions, accounts, the API's shared behaviour,
display formatting and URL validation. It imports no app of ours but `analysis`."""
