"""Widgets and screens of the tail app, plus the Rich renderables they draw."""
