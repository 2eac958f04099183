"""IR expressions and pipelines -> xPU C++ kernel source."""
