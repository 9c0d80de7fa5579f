//! Fuzz target: a syslog TCP byte stream (octet-counted or newline framing)
//! cut into frames, each parsed (RFC 5424 / 3164) and turned into an entry.
#![no_main]

use libfuzzer_sys::fuzz_target;
use runakefli_fuzz::limits;
use runakefli_ingest::syslog::framing::Framer;

fuzz_target!(|data: &[u8]| {
    let l = limits();
    let mut framer = Framer::new(64 << 10);
    framer.push(data);
    let mut frames = Vec::new();
    while let Ok(Some(f)) = framer.next_frame() {
        frames.push(f);
    }
    frames.extend(framer.finish());
    // The whole input as one UDP datagram, too.
    frames.push(data.to_vec());
    for f in frames {
        if let Ok(msg) = runakefli_ingest::syslog::parse(&f, 0) {
            let _ = runakefli_ingest::syslog::to_entry(msg, 0, &l);
        }
    }
});
