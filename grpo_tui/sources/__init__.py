"""Sources: turn bytes on disk into records. Never imports run state or the UI."""
