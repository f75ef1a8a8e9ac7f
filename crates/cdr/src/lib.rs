//! FerroDDS cdr layer (contract to be written).
#![forbid(unsafe_code)]
