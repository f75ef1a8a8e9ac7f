//! The file a capture's writer thread writes: with direct I/O (`O_DIRECT`) where the file
//! system allows it, so that the frames do not go through the page cache.
//!
//! Why: writing a capture through the page cache costs the CPU that runs the data flow a
//! copy of every byte into freshly allocated cache pages, plus the file system's work per
//! page (on this project's test VM a capturing 32 B batched flow kept 0.82 of its rate on
//! tmpfs and about 0.78 on ext4; without the file writes, 0.97). A direct write takes
//! the bytes from the writer's own buffer (reused, 4 KiB-aligned) to the device.
//!
//! Direct writes need an aligned offset and length, so whole 4 KiB blocks go direct, and
//! the last partial block is also written through the page cache at each
//! [`Write::flush`] (the file is whole after every flush), then written again, direct,
//! with what follows it. While messages keep coming the writer thread only writes the whole
//! blocks ([`CaptureFile::write_blocks`]) and flushes once the flow pauses: a partial
//! block written through the page cache and then direct costs the kernel a write-back
//! and an invalidation of that page each time. A file system that refuses direct I/O (at open or at the first
//! write) gets plain writes of everything, and so does an output that is not a regular file
//! (a FIFO that Wireshark reads live), written in sequence.
//!
//! Large runs of whole pcapng blocks ([`CaptureFile::write_in_place`]) are written direct
//! from the caller's memory, without the copy into this file's buffer: a padding block
//! (which readers skip) first moves the file offset to the run's alignment in memory, the
//! run's first bytes up to an aligned address go through the buffer, then its aligned body
//! goes straight to the device.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::Path;

use nix::fcntl::OFlag;

/// Alignment of direct writes (offset, length and memory): a page, a multiple of every
/// device's logical block size.
const ALIGN: usize = 4096;

/// Bytes gathered before a direct write.
const CHUNK: usize = 1 << 20;

/// Smallest run [`CaptureFile::write_in_place`] writes from the caller's memory (a padding
/// block of up to 4 KiB goes with each, and the copy it saves must be worth it).
const IN_PLACE_MIN: usize = 64 << 10;

/// A capture file (see the module docs).
pub(crate) struct CaptureFile {
    /// Plain writes: the tail at each flush, everything when direct I/O is refused.
    plain: File,
    /// Direct writes, while the file system takes them.
    direct: Option<File>,
    buf: Vec<u8>,
    /// Where the held bytes start in `buf` (aligned).
    off: usize,
    /// Bytes held.
    len: usize,
    /// File offset of `buf[off]` (aligned while writing direct).
    pos: u64,
    /// A regular file (written at offsets); otherwise written in sequence.
    seekable: bool,
    /// Scratch: a padding block.
    pad: Vec<u8>,
    /// Bytes written direct from callers' memory ([`Self::write_in_place`]).
    #[cfg(test)]
    in_place: u64,
    /// The held partial block last written through the page cache (file offset, length):
    /// a flush with nothing new does not write it again.
    synced: (u64, usize),
}

impl std::fmt::Debug for CaptureFile {
    // Without the buffer's megabyte of bytes.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CaptureFile")
            .field("direct", &self.direct.is_some())
            .field("held", &self.len)
            .field("pos", &self.pos)
            .field("seekable", &self.seekable)
            .finish()
    }
}

impl CaptureFile {
    /// Creates (or truncates) the file at `path`.
    pub(crate) fn create(path: &Path) -> io::Result<Self> {
        let plain = File::create(path)?;
        let seekable = plain.metadata()?.file_type().is_file();
        let buf = vec![0u8; CHUNK + 3 * ALIGN];
        // (`align_offset` may in principle fail: then no direct I/O.)
        let off = buf.as_ptr().align_offset(ALIGN);
        let aligned = off < ALIGN;
        let off = if aligned { off } else { 0 };
        let direct = if seekable && aligned {
            OpenOptions::new()
                .write(true)
                .custom_flags(OFlag::O_DIRECT.bits())
                .open(path)
                .ok()
        } else {
            None
        };
        Ok(Self {
            plain,
            direct,
            buf,
            off,
            len: 0,
            pos: 0,
            seekable,
            pad: Vec::with_capacity(2 * ALIGN),
            #[cfg(test)]
            in_place: 0,
            synced: (0, 0),
        })
    }

    /// The file (for its metadata, space allocation and length).
    pub(crate) fn file(&self) -> &File {
        &self.plain
    }

    /// Whether writes still go direct.
    #[cfg(test)]
    fn is_direct(&self) -> bool {
        self.direct.is_some()
    }

    /// Room for bytes held.
    fn capacity(&self) -> usize {
        self.buf.len() - self.off
    }

    /// Writes out the whole aligned blocks held (everything, without direct I/O); a last
    /// partial block stays held, not in the file until [`Write::flush`].
    pub(crate) fn write_blocks(&mut self) -> io::Result<()> {
        let Some(direct) = &self.direct else {
            return self.write_all_plain();
        };
        let n = self.len & !(ALIGN - 1);
        if n == 0 {
            return Ok(());
        }
        match direct.write_all_at(&self.buf[self.off..self.off + n], self.pos) {
            Ok(()) => {}
            Err(e) if e.raw_os_error() == Some(nix::libc::EINVAL) => {
                // The file system does not take direct writes after all.
                self.direct = None;
                return self.write_all_plain();
            }
            Err(e) => return Err(e),
        }
        self.pos += n as u64;
        self.buf
            .copy_within(self.off + n..self.off + self.len, self.off);
        self.len -= n;
        Ok(())
    }

    /// Writes `blocks` (whole pcapng blocks; the file is at a block boundary) direct from
    /// `blocks`' own memory where that works: with direct I/O, a run of at least
    /// [`IN_PLACE_MIN`] bytes at a 4-byte-aligned address. A padding block
    /// ([`ferrodds_capture::encode_padding_block`]) then goes before it, so that the run's
    /// aligned body falls on aligned file offsets. Otherwise (or when the file system
    /// refuses) it is written as [`Write::write_all`] does.
    pub(crate) fn write_in_place(&mut self, blocks: &[u8]) -> io::Result<()> {
        let addr = blocks.as_ptr() as usize;
        if self.direct.is_none() || blocks.len() < IN_PLACE_MIN || !addr.is_multiple_of(4) {
            return self.write_all(blocks);
        }
        // The file offset where `blocks` starts must be congruent with its address.
        let at = self.pos + self.len as u64;
        let want = addr % ALIGN;
        let mut gap = (want + ALIGN - (at % ALIGN as u64) as usize) % ALIGN;
        if gap < ferrodds_capture::MIN_PADDING_BLOCK {
            gap += ALIGN;
        }
        let mut pad = std::mem::take(&mut self.pad);
        pad.clear();
        let ok = ferrodds_capture::encode_padding_block(&mut pad, gap);
        let r = if ok { self.write_all(&pad) } else { Ok(()) };
        self.pad = pad;
        r?;
        if !ok {
            return self.write_all(blocks);
        }
        // Up to the first aligned address through the buffer: what is held then ends on
        // an aligned offset and goes out whole.
        let head = (ALIGN - want) % ALIGN;
        self.write_all(&blocks[..head])?;
        self.write_blocks()?;
        let body = (blocks.len() - head) & !(ALIGN - 1);
        if self.len != 0 || body == 0 {
            return self.write_all(&blocks[head..]);
        }
        let Some(direct) = &self.direct else {
            return self.write_all(&blocks[head..]);
        };
        match direct.write_all_at(&blocks[head..head + body], self.pos) {
            Ok(()) => {}
            Err(e) if e.raw_os_error() == Some(nix::libc::EINVAL) => {
                self.direct = None;
                return self.write_all(&blocks[head..]);
            }
            Err(e) => return Err(e),
        }
        self.pos += body as u64;
        #[cfg(test)]
        {
            self.in_place += body as u64;
        }
        self.write_all(&blocks[head + body..])
    }

    fn write_all_plain(&mut self) -> io::Result<()> {
        let held = &self.buf[self.off..self.off + self.len];
        if self.seekable {
            self.plain.write_all_at(held, self.pos)?;
        } else {
            (&self.plain).write_all(held)?;
        }
        self.pos += self.len as u64;
        self.len = 0;
        Ok(())
    }
}

impl Write for CaptureFile {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        if self.len == self.capacity() {
            self.write_blocks()?;
        }
        let n = data.len().min(self.capacity() - self.len);
        let at = self.off + self.len;
        self.buf[at..at + n].copy_from_slice(&data[..n]);
        self.len += n;
        if self.len >= CHUNK {
            self.write_blocks()?;
        }
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.write_blocks()?;
        if self.len > 0 && self.synced != (self.pos, self.len) {
            // The partial block through the page cache; it stays held, to be written
            // direct with what follows it.
            self.plain
                .write_all_at(&self.buf[self.off..self.off + self.len], self.pos)?;
            self.synced = (self.pos, self.len);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir() -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("ferrodds-capture-file-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    /// Writes of every size, flushes between them, and a file read back at every flush:
    /// the file always holds exactly what was written, direct or not.
    #[test]
    fn the_file_holds_what_was_written_after_every_flush() {
        let path = dir().join("direct.bin");
        let mut f = CaptureFile::create(&path).unwrap();
        let direct_at_start = f.is_direct();
        let mut want = Vec::new();
        let mut x = 1u32;
        for round in 0..40 {
            // Sizes from 1 byte to over a chunk, some aligned, most not.
            let n = match round % 5 {
                0 => 1,
                1 => 4096,
                2 => 70_001,
                3 => CHUNK + 12_345,
                _ => (round * 977) % 9000,
            };
            let data: Vec<u8> = (0..n)
                .map(|_| {
                    x = x.wrapping_mul(1_103_515_245).wrapping_add(12_345);
                    (x >> 16) as u8
                })
                .collect();
            f.write_all(&data).unwrap();
            want.extend_from_slice(&data);
            if round % 3 != 0 {
                f.flush().unwrap();
                assert_eq!(std::fs::read(&path).unwrap(), want, "after round {round}");
            }
        }
        f.flush().unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), want);
        assert_eq!(f.file().metadata().unwrap().len(), want.len() as u64);
        // Where the temporary directory's file system takes direct I/O, it was used
        // throughout (not silently dropped).
        assert_eq!(f.is_direct(), direct_at_start);
        drop(f);
        let _ = std::fs::remove_file(&path);
    }

    /// A FIFO (Wireshark reading live) is written in sequence, without direct I/O.
    #[test]
    fn a_fifo_is_written_in_sequence() {
        let path = dir().join("live.fifo");
        let _ = std::fs::remove_file(&path);
        let ok = std::process::Command::new("mkfifo")
            .arg(&path)
            .status()
            .expect("mkfifo runs");
        assert!(ok.success());
        let p = path.clone();
        let reader = std::thread::spawn(move || std::fs::read(&p).unwrap());
        let data: Vec<u8> = (0..CHUNK + 999).map(|i| (i % 253) as u8).collect();
        let mut f = CaptureFile::create(&path).unwrap();
        assert!(!f.is_direct());
        for part in data.chunks(4099) {
            f.write_all(part).unwrap();
            f.flush().unwrap();
        }
        drop(f);
        assert_eq!(reader.join().unwrap(), data);
        let _ = std::fs::remove_file(&path);
    }

    /// An RTPS message (tshark decodes it): a header with `fill` as its GUID prefix and a
    /// DATA whose payload is `4 * words` bytes of `fill` after its encapsulation.
    fn rtps_pad(words: usize, fill: u8) -> Vec<u8> {
        let mut m = b"RTPS\x02\x03\x01\x0f".to_vec();
        m.extend_from_slice(&[fill; 12]);
        m.extend_from_slice(&[0x15, 0x05]);
        m.extend_from_slice(&u16::try_from(24 + 4 * words).unwrap().to_le_bytes());
        m.extend_from_slice(&[0, 0, 16, 0, 0, 0, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 1, 0, 0, 0]);
        m.extend_from_slice(&[0, 1, 0, 0]);
        m.resize(m.len() + 4 * words, fill);
        m
    }

    /// Runs of packet blocks written in place, at every alignment in memory, between plain
    /// writes and flushes: the file reads back as every packet in order (the padding
    /// blocks skipped), tshark decodes it cleanly, and where the file system takes direct
    /// I/O most bytes went straight from the runs' memory.
    #[test]
    fn runs_written_in_place_read_back_whole() {
        use ferrodds_capture::{encode_udp_packet_block, CaptureWriter, Direction};
        use std::net::{Ipv4Addr, SocketAddrV4};
        let path = dir().join("in-place.pcapng");
        let mut w = CaptureWriter::new(CaptureFile::create(&path).unwrap()).unwrap();
        let iface = w.add_interface("lo").unwrap();
        let direct = w.get_ref().is_direct();
        let (a, b) = (
            SocketAddrV4::new(Ipv4Addr::LOCALHOST, 7410),
            SocketAddrV4::new(Ipv4Addr::LOCALHOST, 7411),
        );
        let mut want = Vec::new();
        let mut total = 0u64;
        for round in 0..24usize {
            // A run of packets at a different alignment each round (4-byte steps).
            let skip = (round * 4 * 37) % 4096;
            let mut buf = vec![0u8; skip];
            let n = 20 + round * 7;
            for k in 0..n {
                let payload = rtps_pad((round * 997 + k * 131) % 2000, (k + round) as u8);
                let ts = 1_700_000_000_000_000_000 + (want.len() as u64) * 1000;
                assert!(encode_udp_packet_block(
                    &mut buf,
                    iface,
                    ts,
                    a,
                    b,
                    1,
                    &payload,
                    Direction::Outbound
                ));
                want.push(payload);
            }
            let run = &buf[skip..];
            total += run.len() as u64;
            w.get_mut().write_in_place(run).unwrap();
            if round % 3 == 0 {
                let p = rtps_pad(100 + round, round as u8);
                w.write_udp(
                    iface,
                    std::time::Duration::from_secs(1_700_000_000),
                    a,
                    b,
                    &p,
                    Direction::Inbound,
                    None,
                )
                .unwrap();
                want.push(p);
            }
            if round % 4 == 1 {
                w.flush().unwrap();
            }
        }
        w.flush().unwrap();
        let in_place = w.get_ref().in_place;
        assert_eq!(w.get_ref().is_direct(), direct);
        drop(w);
        let c = ferrodds_capture::read_udp_payloads(&path).unwrap();
        assert!(c.skipped.is_empty(), "{:?}", c.skipped);
        let got: Vec<Vec<u8>> = c.datagrams.into_iter().map(|d| d.payload).collect();
        assert_eq!(got.len(), want.len());
        assert!(got == want, "payloads differ");
        if direct {
            assert!(
                in_place * 10 >= total * 8,
                "{in_place} of {total} bytes in place"
            );
        }
        ferrodds_capture::testing::assert_tshark_clean(&path);
        let _ = std::fs::remove_file(&path);
    }

    /// Without direct I/O (as on a file system that refuses it) the same holds.
    #[test]
    fn plain_writes_when_direct_io_is_refused() {
        let path = dir().join("plain.bin");
        let mut f = CaptureFile::create(&path).unwrap();
        f.direct = None;
        let data: Vec<u8> = (0..3 * CHUNK + 5).map(|i| (i % 251) as u8).collect();
        for part in data.chunks(100_003) {
            f.write_all(part).unwrap();
        }
        f.flush().unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), data);
        let _ = std::fs::remove_file(&path);
    }
}
