"""The Textual views: the live `tail` app, its widgets, screens and themes.

Everything here renders what core (grpo_tui.run, grpo_tui.health) hands it; nothing
here parses files or judges health.
"""
