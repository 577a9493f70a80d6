//! CUDA kernels and their host side: being written (see ARCHITECTURE.md).
