"""Developer tools: the benchmark, latency and load tests, the model trainer. The app never imports them."""
