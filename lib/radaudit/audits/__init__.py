"""The experiments' methods: functions from tidy inputs to tidy result tables (and their figures)."""
