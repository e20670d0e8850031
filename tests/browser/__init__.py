"""Tests in headless Chromium: JupyterLab, Notebook 7, sign-in pages and the views agent hosts show."""
