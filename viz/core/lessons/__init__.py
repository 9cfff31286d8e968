"""Lesson views and the guided tour, read from engine and serving results."""
