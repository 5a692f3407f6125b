"""Plotly figures built on the server: `service` (one service's live charts), `fleet`,
`loadtests` (baseline vs candidate); `common` holds the shared look and the panels payload."""
