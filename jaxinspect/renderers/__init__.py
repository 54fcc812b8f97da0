"""Renderers turn report objects into text; they compute nothing."""
