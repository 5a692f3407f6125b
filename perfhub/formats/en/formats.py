# One way to write a moment everywhere (pages, titles, tables): ISO-like, with the time zone,
# instead of the locale's "Dec. 1, 2026, 4:57 a.m." beside "2026-12-01 04:57" elsewhere.
DATE_FORMAT = "Y-m-d"
SHORT_DATE_FORMAT = "Y-m-d"
DATETIME_FORMAT = "Y-m-d H:i T"
SHORT_DATETIME_FORMAT = "Y-m-d H:i T"
TIME_FORMAT = "H:i"
