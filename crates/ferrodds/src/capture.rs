//! Optional pcapng tap at the transport boundary ([`crate::Config::capture_file`]).
//!
//! Every datagram the participant sends or receives is written with its direction, real
//! ports and addresses, in synthetic Ethernet/IPv4/UDP framing (see `ferrodds-capture`).
//! This first version writes synchronously under a mutex: it is a debugging aid, not meant
//! for latency measurements.

use std::fs::File;
use std::io::BufWriter;
use std::net::SocketAddrV4;
use std::path::Path;
use std::sync::Mutex;

use ferrodds_capture::{CaptureWriter, Direction, InterfaceId};

use crate::error::DdsError;
use crate::runtime::lock;

pub(crate) struct CaptureTap {
    writer: Mutex<CaptureWriter<BufWriter<File>>>,
    iface: InterfaceId,
}

impl CaptureTap {
    pub(crate) fn create(path: &Path, iface_name: &str) -> Result<Self, DdsError> {
        let file = File::create(path)?;
        let mut writer = CaptureWriter::new(BufWriter::new(file))?;
        let iface = writer.add_interface(iface_name)?;
        Ok(Self {
            writer: Mutex::new(writer),
            iface,
        })
    }

    fn write(&self, src: SocketAddrV4, dst: SocketAddrV4, bytes: &[u8], dir: Direction) {
        let mut w = lock(&self.writer);
        if let Err(e) = w.write_udp_now(self.iface, src, dst, bytes, dir, None) {
            tracing::debug!(error = %e, "capture write failed");
        }
    }

    pub(crate) fn outbound(&self, src: SocketAddrV4, dst: SocketAddrV4, bytes: &[u8]) {
        self.write(src, dst, bytes, Direction::Outbound);
    }

    pub(crate) fn inbound(&self, src: SocketAddrV4, dst: SocketAddrV4, bytes: &[u8]) {
        self.write(src, dst, bytes, Direction::Inbound);
    }

    pub(crate) fn flush(&self) {
        if let Err(e) = lock(&self.writer).flush() {
            tracing::warn!(error = %e, "capture flush failed");
        }
    }
}
