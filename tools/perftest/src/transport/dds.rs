//! DDS backend (in progress).
