"""The line diff engine: a linear line match, unified hunks, and a structural match of names."""
