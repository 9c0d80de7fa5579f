//! Block-level tests: lossless round trips, encoding choice, token pruning,
//! corruption handling, column access, and an ignored measurement.

use proptest::prelude::*;

use super::testgen::Workload;
use super::*;

type Row<'a> = (i64, &'a str, Vec<(String, String)>);

fn encode(rows: &[Row<'_>], level: i32) -> Vec<u8> {
    let mut b = BlockBuilder::new();
    for (ts, l, md) in rows {
        b.push(*ts, l, md);
    }
    let mut out = Vec::new();
    let meta = b.finish(level, &mut out);
    assert_eq!(meta.rows as usize, rows.len());
    assert!(b.is_empty());
    out
}

fn round_trip(lines: &[&str]) -> Vec<u8> {
    let rows: Vec<_> = lines
        .iter()
        .enumerate()
        .map(|(i, l)| (i as i64 * 7 - 3, *l, Vec::new()))
        .collect();
    let buf = encode(&rows, 3);
    let d = decode_block(&buf).unwrap();
    assert_eq!(
        d.lines,
        lines.iter().map(|s| s.to_string()).collect::<Vec<_>>()
    );
    assert_eq!(d.ts, rows.iter().map(|r| r.0).collect::<Vec<_>>());
    buf
}

const AWKWARD: &[&str] = &[
    r#"{"a":1,"b":"x"}"#,
    r#"{ "a" : 1 , "b" : "x" }"#,
    "{\n\t\"a\":\r\n1}\n",
    r#"{"b":"x","a":1}"#,
    r#"{"s":"caf\u00e9 \"quoted\" \\ back\/slash","t":"tab\there"}"#,
    r#"{"n":1.50,"m":1e3,"z":-0,"i":-12,"f":0.000,"big":123456789012345678901234567890}"#,
    r#"{"nested":{"a":{"b":{"c":"deep"}},"e":{}},"arr":[1,"two",{"three":[3]}],"emptyarr":[]}"#,
    r#"{"dup":1,"dup":2}"#,
    r#"{"a.b":1,"a":{"b":2}}"#,
    r#"{"a":1"#,
    r#"{"a":1}}"#,
    r#"{"a":tru}"#,
    r#"[1,2,3]"#,
    r#""just a string""#,
    "42",
    "",
    " ",
    "plain text line with words",
    "héllo wörld ☃ 日本語 🎉",
    r#"{"emoji":"🎉","jp":"日本語","k€y":"v"}"#,
    r#"{"":"empty key","x":""}"#,
    r#"{}"#,
    r#"{"ts":"2026-11-29T00:59:49.854Z","id":"550e8400-e29b-41d4-a716-446655440000","ip":"10.0.0.1"}"#,
    r#"{"ts":"2026-02-30T00:59:49.854Z","id":"550E8400-e29b-41d4-a716-44665544000","ip":"10.00.0.1"}"#,
    r#"{"a":true,"b":false,"c":null}"#,
    r#"{"a":"true","b":"1","c":"null"}"#,
    "{\"ctl\":\"\u{1}\u{7f}\"}",
];

#[test]
fn awkward_corpus_round_trips() {
    round_trip(AWKWARD);
    for l in AWKWARD {
        round_trip(&[l]);
        round_trip(&[l, l, l]);
    }
    round_trip(&[]);
    let long = format!(r#"{{"big":"{}","n":1}}"#, "x".repeat(20_000));
    let long_raw = "y ".repeat(8_000);
    round_trip(&[&long, &long_raw, &long, AWKWARD[0]]);
}

#[test]
fn big_blocks_use_separate_frames_and_round_trip() {
    let mut w = Workload::new(7);
    let lines: Vec<String> = (0..2000).map(|_| w.line().1).collect();
    let refs: Vec<&str> = lines.iter().map(|s| s.as_str()).collect();
    let buf = round_trip(&refs);
    let h = layout::BlockHeader::decode(&buf).unwrap();
    assert!(
        h.frames.len() > layout::FIXED_FRAMES,
        "large columns should get their own frames"
    );
    // Readers keep the first five frames in place and the rest in a list:
    // this block reads through both. Columns read in one order and then
    // another through one reader (the second time from its kept frames)
    // equal those a fresh reader reads for each.
    assert!(h.frames.len() > 7, "{} frames", h.frames.len());
    let names = BlockReader::open(&buf).unwrap().column_names();
    let fresh: Vec<Vec<Option<String>>> = names
        .iter()
        .map(|n| {
            let r = BlockReader::open(&buf).unwrap();
            let c = r.column(n).unwrap().unwrap();
            c.iter().map(|v| v.map(str::to_string)).collect()
        })
        .collect();
    let r = BlockReader::open(&buf).unwrap();
    let order: Vec<usize> = (0..names.len()).rev().chain(0..names.len()).collect();
    for i in order {
        let c = r.column(&names[i]).unwrap().unwrap();
        let got: Vec<Option<String>> = c.iter().map(|v| v.map(str::to_string)).collect();
        assert_eq!(got, fresh[i], "column {}", names[i]);
    }
    assert_eq!(r.lines().unwrap(), lines);
}

#[test]
fn many_templates_round_trip() {
    let lines: Vec<String> = (0..600)
        .map(|i| format!(r#"{{"k{}":{i},"v":"x"}}"#, i % 300))
        .collect();
    let refs: Vec<&str> = lines.iter().map(|s| s.as_str()).collect();
    round_trip(&refs);
}

#[test]
fn metadata_round_trips() {
    let rows = vec![
        (1, "a", vec![]),
        (
            2,
            "{\"x\":1}",
            vec![
                ("trace".to_string(), "abc".to_string()),
                ("pod".to_string(), "p-1".to_string()),
            ],
        ),
        (2, "b", vec![("pod".to_string(), "".to_string())]),
    ];
    let buf = encode(&rows, 1);
    let d = decode_block(&buf).unwrap();
    assert_eq!(
        d.metadata,
        rows.iter().map(|r| r.2.clone()).collect::<Vec<_>>()
    );
    // Each distinct list of pairs is stored once.
    let r = BlockReader::open(&buf).unwrap();
    let md = r.metadata().unwrap();
    assert_eq!(md.set_count(), 3);
    let many: Vec<Row<'_>> = (0..50)
        .map(|i| {
            let level = if i % 3 == 0 { "error" } else { "info" };
            (
                i,
                "line",
                vec![("detected_level".to_string(), level.to_string())],
            )
        })
        .collect();
    let buf2 = encode(&many, 1);
    let r2 = BlockReader::open(&buf2).unwrap();
    let md2 = r2.metadata().unwrap();
    assert_eq!(md2.set_count(), 2);
    assert_eq!(
        md2.to_vec(),
        many.iter().map(|r| r.2.clone()).collect::<Vec<_>>()
    );
    // Line filters read lines only: metadata values never make a block match.
    assert!(!block_may_contain(&buf, &[" abc ".into()]));
    assert!(block_may_contain(&buf, &["\"x\":1".into()]));
}

#[test]
fn workload_columns_pick_expected_encodings() {
    let mut w = Workload::new(1);
    let mut b = BlockBuilder::new();
    for _ in 0..1000 {
        let (ts, l) = w.line();
        b.push(ts, &l, &[]);
    }
    let mut buf = Vec::new();
    b.finish(3, &mut buf);
    let r = BlockReader::open(&buf).unwrap();
    let enc = |n: &str| r.column_info(n).unwrap_or_else(|| panic!("{n}")).0;
    assert_eq!(enc("timestamp"), Encoding::Timestamp);
    assert_eq!(enc("level"), Encoding::Dict);
    assert_eq!(enc("status"), Encoding::Dict);
    assert_eq!(enc("duration_ms"), Encoding::Decimal);
    assert_eq!(enc("bytes"), Encoding::Decimal);
    assert_eq!(enc("client_ip"), Encoding::Ipv4);
    assert_eq!(enc("request_id"), Encoding::Hex);
    assert_eq!(enc("trace_id"), Encoding::Hex);
    assert_eq!(enc("span_id"), Encoding::Hex);
    assert_eq!(enc("kubernetes.cluster"), Encoding::Const);
    assert_eq!(enc("protocol"), Encoding::Const);
    match r.column_info("duration_ms").unwrap().1 {
        Some(Stats::Number { min, max }) => assert!(min >= 0.0 && max > min),
        other => panic!("{other:?}"),
    }
}

#[test]
fn reader_reads_single_columns() {
    let lines = [
        r#"{"level":"error","msg":"a \"b\"","n":1}"#,
        "not json",
        r#"{"msg":"c","level":"info","req":{"m":"GET"}}"#,
        r#"{"level":"error","n":"2"}"#,
    ];
    let rows: Vec<_> = lines
        .iter()
        .enumerate()
        .map(|(i, l)| (i as i64 * 10, *l, Vec::new()))
        .collect();
    let buf = encode(&rows, 3);
    let r = BlockReader::open(&buf).unwrap();
    assert_eq!(r.rows(), 4);
    assert_eq!(r.timestamps(), &[0, 10, 20, 30]);
    assert_eq!(r.time_range(), (0, 30));
    let mut names = r.column_names();
    names.sort();
    assert_eq!(names, vec!["level", "msg", "n", "req.m"]);
    let level = r.column("level").unwrap().unwrap();
    assert_eq!(
        level.iter().collect::<Vec<_>>(),
        vec![Some("error"), None, Some("info"), Some("error")]
    );
    assert!(level.is_string(0));
    let msg = r.column("msg").unwrap().unwrap();
    assert_eq!(msg.get(0), Some(r#"a \"b\""#));
    let n = r.column("n").unwrap().unwrap();
    assert_eq!(
        (n.get(0), n.is_string(0), n.get(3), n.is_string(3)),
        (Some("1"), false, Some("2"), true)
    );
    assert_eq!(r.column("req.m").unwrap().unwrap().get(2), Some("GET"));
    assert!(r.column("missing").unwrap().is_none());
    assert_eq!(r.lines().unwrap(), lines.to_vec());
}

#[test]
fn may_contain_prunes_clear_cases() {
    let mut w = Workload::new(3);
    let lines: Vec<(i64, String)> = (0..200).map(|_| w.line()).collect();
    let rows: Vec<_> = lines
        .iter()
        .map(|(t, l)| (*t, l.as_str(), Vec::new()))
        .collect();
    let buf = encode(&rows, 3);
    let yes =
        |s: &[&str]| block_may_contain(&buf, &s.iter().map(|x| x.to_string()).collect::<Vec<_>>());
    assert!(yes(&["timeout"]), "partial tokens prove nothing");
    assert!(yes(&[" completed\""]));
    assert!(yes(&["\"level\":\"info\""]));
    assert!(yes(&["\"region\":\"eu-west-1\""]));
    assert!(yes(&[" Chrome/"]));
    // Scoped keys are probed per candidate column: a long word fits few.
    assert!(!yes(&[" zebrazebrazebra "]));
    // Short words are probed in every column whose tokens could hold them,
    // each probe with its own chance of a false positive: most absent ones
    // are still ruled out.
    let pruned = (0..100)
        .filter(|i| !yes(&[&format!("\"level\":\"fatal{i}\"")]))
        .count();
    assert!(pruned >= 70, "pruned {pruned} of 100");
    assert!(!yes(&["\"zebrazebrazebra\":"]));
    assert!(!yes(&[" completed\"", " zebrazebrazebra "]));
    // A needle token made of letters cannot hide in hex, number or IP columns.
    let h = layout::BlockHeader::decode(&buf).unwrap();
    if let Some(frags) = super::prune::needle_sources(&h, &buf, b"-xyzw-") {
        for f in frags {
            for (c, may) in h.columns.iter().zip(&f.columns) {
                assert!(c.encoding.is_string() || !may, "{:?}", c.encoding);
            }
        }
    }
    // user_id is a prefixed decimal: only `user_<digits>` tokens can be in it.
    assert!(yes(&["\"user_id\":\"user_"]));
    assert!(!yes(&[" user_abc "]));
    assert!(!yes(&[" usr "]));
    assert!(yes(&["-4bf9-"]) || !yes(&["-4bf9-"]));
    let raw = encode(&[(1, "connection timeout to db", Vec::new())], 1);
    assert!(block_may_contain(&raw, &["connection timeout".into()]));
    assert!(block_may_contain(&raw, &[" timeout ".into()]));
    assert!(!block_may_contain(&raw, &[" refused ".into()]));
    assert!(block_may_contain(&raw, &[]));
}

#[test]
fn value_tokens_prune_needles_inside_tokens() {
    let line = |i: u32| {
        format!(
            r#"{{"msg":"request completed","user_id":"usr_{:08}","trace_id":"{:032x}","request_id":"1888db50-d74e-4f1c-ba74-{:012x}","ms":{}.5}}"#,
            i * 7919,
            u128::from(i).wrapping_mul(0x9e37_79b9_7f4a_7c15_f39c_c060_5ced_c835),
            u64::from(i) * 0x1234_5678_9abc,
            i
        )
    };
    let lines: Vec<String> = (0..300).map(line).collect();
    let rows: Vec<_> = lines.iter().map(|l| (0, l.as_str(), Vec::new())).collect();
    let buf = encode(&rows, 3);
    let header = super::layout::BlockHeader::decode(&buf).unwrap();
    assert_eq!(header.version, super::layout::VERSION);
    assert!(header.has_grams);
    let may = |s: &str| block_may_contain(&buf, &[s.to_string()]);
    for i in [0u32, 1, 150, 299] {
        let l = &lines[i as usize];
        let trace = format!(
            "{:032x}",
            u128::from(i).wrapping_mul(0x9e37_79b9_7f4a_7c15_f39c_c060_5ced_c835)
        );
        assert!(l.contains(&trace));
        assert!(may(&trace), "stored trace id {trace}");
        assert!(may(&trace[3..20]), "part of a stored trace id");
        assert!(may(&format!("usr_{:08}", i * 7919)));
        assert!(may(&format!("{:012x}", u64::from(i) * 0x1234_5678_9abc)));
    }
    // Ids that are not there, as whole tokens or as bare needles.
    assert!(!may("47427f18eca769601347c34f1e0dc5fd"));
    assert!(!may("usr_99999999"));
    assert!(!may("\"usr_99999999\""));
    assert!(!may("middleware"), "inside no long token (grams)");
    assert!(
        !may("deadbeefdeadbeef"),
        "inside no longer hex value (the hex columns' stride grams)"
    );
    assert!(!may("completedx"), "longer than the words it could sit in");
    assert!(may("complete"));
    assert!(may("quest compl"));
    // A needle longer than every hex token cannot sit in the hex column.
    assert!(!may(&format!("{}0", &format!("{:032x}", 5u128))));
}

/// Ids that interleave digits and letters (`k3x9q2m`), typed alone as
/// needles shorter than a gram, are ruled out of free text whose longest
/// token with a digit before a letter is as long (then they are whole
/// tokens there), though words, numbers and `name42` tokens there are
/// longer, and of templates whose longer tokens they are not in (short
/// grams); they are never ruled out where a value or a template token
/// holds them.
#[test]
fn short_mixed_ids_are_judged_by_the_longest_mixed_token() {
    let uid = |i: u32| {
        let a = b"kmxqpwz";
        let mut s = String::new();
        for k in 0..7u32 {
            let v = i.wrapping_mul(2_654_435_761).rotate_left(k * 5);
            if k % 2 == 0 {
                s.push(char::from(a[(v % 7) as usize]));
            } else {
                s.push(char::from(b'0' + (v % 10) as u8));
            }
        }
        s
    };
    let json: Vec<String> = (0..200)
        .map(|i| {
            format!(
                r#"{{"k8s_node":"node-{}","message":"payment captured for {} after 3 retries, successfully","account":"dahlberg{}@corp.io","uid":"{}"}}"#,
                i % 17,
                uid(i),
                i * 7919,
                uid(i + 1000)
            )
        })
        .collect();
    let plain: Vec<String> = (0..200)
        .map(|i| {
            format!(
                "2026-12-04T16:10:51.{:03}Z INFO [pool-3-thread-7] uid={} account=dahlberg{}@corp.io took=12.3ms trace={:032x} successfully",
                i,
                uid(i + 5000),
                i * 7919,
                u128::from(i).wrapping_mul(0x9e37_79b9_7f4a_7c15_f39c_c060_5ced_c835)
            )
        })
        .collect();
    for (lines, first) in [(&json, 0u32), (&plain, 5000)] {
        let rows: Vec<_> = lines.iter().map(|l| (0, l.as_str(), Vec::new())).collect();
        let buf = encode(&rows, 3);
        let header = super::layout::BlockHeader::decode(&buf).unwrap();
        assert!(header.has_short_grams);
        assert!(header
            .columns
            .iter()
            .any(|c| c.feature_token_lens[super::tokens::FEATURE_DIGIT_LETTER] == 7));
        let may = |s: &str| block_may_contain(&buf, &[s.to_string()]);
        for i in [first, first + 1, first + 199] {
            let id = uid(i);
            assert!(lines.iter().any(|l| l.contains(&id)));
            assert!(may(&id), "stored id {id}");
            assert!(may(&id[1..6]), "part of a stored id");
        }
        // Not there: ruled out, though shorter than a gram and typed alone
        // (up to the bloom's false positives, about 3 % a probe).
        let absent: Vec<String> = (0..200u32)
            .map(|i| uid(i + 90_000))
            .filter(|id| !lines.iter().any(|l| l.contains(id.as_str())))
            .collect();
        let kept = absent.iter().filter(|id| may(id)).count();
        assert!(
            absent.len() > 150 && kept * 10 < absent.len(),
            "{kept} of {}",
            absent.len()
        );
        // Parts of the longer tokens are still found.
        assert!(may("ccessful"));
        assert!(may("ccess"));
    }
    let rows: Vec<_> = json.iter().map(|l| (0, l.as_str(), Vec::new())).collect();
    let buf = encode(&rows, 3);
    // Hex ids and long numbers lie only in runs of hex digits or of digits
    // at least as long: no column of these lines has one.
    let header = super::layout::BlockHeader::decode(&buf).unwrap();
    for absent in ["a765427102", "46395335809001"] {
        let sources = super::prune::needle_sources(&header, &buf, absent.as_bytes());
        assert!(
            sources
                .as_ref()
                .is_none_or(|s| s.iter().all(|f| f.columns.iter().all(|&c| !c))),
            "{absent}: {sources:?}"
        );
    }
    assert!(block_may_contain(&buf, &["7919".to_string()]));
    // Inside a template token (the key k8s_node) and no value.
    assert!(block_may_contain(&buf, &["8s_no".to_string()]));
    assert!(block_may_contain(&buf, &["k8s_nod".to_string()]));
}

/// Once a block's templates were read, a reader of a block with those
/// templates builds them from the texts kept by id: damage to its templates
/// frame, which it then does not read, changes no line; damage anywhere else
/// it reads is an error; and a whole decode still reads and checks the frame.
#[test]
fn kept_template_texts_stand_in_for_an_unread_templates_frame() {
    let mut w = Workload::new(41);
    let rows: Vec<_> = (0..60).map(|_| w.line()).collect();
    let refs: Vec<_> = rows
        .iter()
        .map(|(t, l)| (*t, l.as_str(), Vec::new()))
        .collect();
    let buf = encode(&refs, 3);
    let want = BlockReader::open(&buf).unwrap().lines().unwrap();
    let mut rng = testgen::Rng::new(5);
    let mut unread = 0;
    for i in 0..buf.len() {
        let mut bad = buf.clone();
        bad[i] ^= 1 << rng.below(8);
        let got = BlockReader::open(&bad).and_then(|r| r.lines());
        if let Ok(lines) = got {
            assert_eq!(lines, want, "flip at {i} changed a line");
            assert!(decode_block(&bad).is_err(), "flip at {i} undetected");
            let r = BlockReader::open(&bad).unwrap();
            unread += usize::from(r.check_templates_frame().is_err());
        }
    }
    assert!(unread > 0, "no flip in the templates frame went unread");
}

#[test]
fn corruption_is_an_error_never_a_panic() {
    let mut w = Workload::new(5);
    let rows: Vec<_> = (0..50).map(|_| w.line()).collect();
    let mut refs: Vec<_> = rows
        .iter()
        .map(|(t, l)| (*t, l.as_str(), Vec::new()))
        .collect();
    refs.push((i64::MAX, "raw line", vec![("k".into(), "v".into())]));
    let buf = encode(&refs, 3);
    assert!(decode_block(&buf).is_ok());
    let mut rng = testgen::Rng::new(11);
    for i in 0..buf.len() {
        let mut bad = buf.clone();
        bad[i] ^= 1 << rng.below(8);
        assert!(decode_block(&bad).is_err(), "flip at {i} undetected");
        let _ = block_may_contain(&bad, &[" info ".into()]);
    }
    for n in 0..buf.len() {
        assert!(decode_block(&buf[..n]).is_err());
    }
    let mut longer = buf.clone();
    longer.push(0);
    assert!(decode_block(&longer).is_err());
}

/// Blocks written with a shared dictionary writer: returns the blocks and
/// the dictionaries.
fn shared_blocks(blocks: &[Vec<String>]) -> (Vec<Vec<u8>>, shared::SharedDicts) {
    let mut sw = shared::SharedDictWriter::new();
    let mut b = BlockBuilder::new();
    let mut out = Vec::new();
    for lines in blocks {
        for (i, l) in lines.iter().enumerate() {
            b.push(i as i64, l, &[]);
        }
        let mut buf = Vec::new();
        b.finish_in(3, &mut buf, Some(&mut sw));
        out.push(buf);
    }
    (out, sw.finish())
}

#[test]
fn timestamps_read_backward_match_the_full_decode() {
    let mut w = Workload::new(4);
    let rows: Vec<(i64, String)> = (0..300).map(|_| w.line()).collect();
    let mut b = BlockBuilder::new();
    for (i, (_, l)) in rows.iter().enumerate() {
        // Irregular gaps, equal neighbours, negative times.
        let ts = -1_000_000 + (i as i64 / 3) * 7_919 + (i as i64 % 3);
        b.push(ts, l, &[]);
    }
    let mut buf = Vec::new();
    b.finish(3, &mut buf);
    let full = BlockReader::open(&buf).unwrap().timestamps().to_vec();
    for lo in [
        i64::MIN,
        full[0],
        full[0] + 1,
        full[150],
        full[290],
        full[299],
        full[299] + 1,
        i64::MAX,
    ] {
        // A fresh reader, and one that has walked part of the way already.
        for warm in [None, Some(full[280])] {
            let r = BlockReader::open(&buf).unwrap();
            if let Some(w) = warm {
                r.first_row_from(w);
            }
            let got = r.first_row_from(lo);
            assert_eq!(got, full.partition_point(|&t| t < lo), "lo {lo}");
            for (i, &ts) in full.iter().enumerate().skip(got) {
                assert_eq!(r.row_ts(i), ts);
            }
        }
    }
}

/// The format allows a delta below zero (the store never writes one: it
/// sorts each stream's rows), and a reader decodes it, though it adds
/// the deltas of rows in time order the fast way first.
#[test]
fn timestamps_out_of_time_order_still_decode() {
    let mut w = Workload::new(5);
    for (gap, shuffle) in [(1i64, 5usize), (1_000, 7), (3, 97)] {
        let times: Vec<i64> = (0..200i64)
            .map(|i| {
                let j = (i as usize * shuffle) % 200;
                10_000 + j as i64 * gap
            })
            .collect();
        let mut b = BlockBuilder::new();
        for &t in &times {
            let (_, l) = w.line();
            b.push(t, &l, &[]);
        }
        let mut buf = Vec::new();
        b.finish(3, &mut buf);
        let r = BlockReader::open(&buf).unwrap();
        assert_eq!(r.timestamps(), &times[..], "gap {gap}");
    }
}

#[test]
fn a_reader_given_the_kept_directory_reads_what_a_fresh_one_does() {
    let mut w = Workload::new(9);
    let mut b = BlockBuilder::new();
    for i in 0..200i64 {
        let (_, l) = w.line();
        // Lines of two shapes: more than one template.
        let l = if i % 7 == 0 { format!("plain {i}") } else { l };
        b.push(1_000 + i * 13, &l, &[]);
    }
    let mut buf = Vec::new();
    b.finish(3, &mut buf);
    let verified = super::reader::BlockLog::default();
    let header = || HeaderRef::Owned(layout::BlockHeader::decode(&buf).unwrap());
    let fresh = BlockReader::with_context(&buf, header(), None, Some(&verified)).unwrap();
    let (tpl, ts) = (
        fresh.row_templates_shared().clone(),
        fresh.timestamps_shared().clone(),
    );
    assert!(fresh.template_count() > 1);
    // The directory was checked by `fresh`: the frame is not read again.
    let given = BlockReader::with_directory(
        &buf,
        header(),
        None,
        Some(&verified),
        tpl.clone(),
        ts.clone(),
    )
    .unwrap();
    assert!(std::ptr::eq(given.row_templates(), &tpl[..]));
    assert!(std::ptr::eq(given.timestamps(), &ts[..]));
    assert_eq!(given.lines().unwrap(), fresh.lines().unwrap());
    // Counts that do not fit the block, or a directory never checked, make
    // the reader read the directory itself.
    let short: std::sync::Arc<[u32]> = tpl[..10].to_vec().into();
    let wrong =
        BlockReader::with_directory(&buf, header(), None, Some(&verified), short, ts.clone())
            .unwrap();
    assert_eq!(wrong.row_templates(), &tpl[..]);
    let unchecked = super::reader::BlockLog::default();
    let zeros: std::sync::Arc<[u32]> = vec![0; tpl.len()].into();
    let read =
        BlockReader::with_directory(&buf, header(), None, Some(&unchecked), zeros, ts).unwrap();
    assert_eq!(read.row_templates(), &tpl[..]);
    assert_eq!(read.lines().unwrap(), fresh.lines().unwrap());
}

#[test]
fn shared_dictionary_blocks_round_trip() {
    let mut w = Workload::new(9);
    let blocks: Vec<Vec<String>> = (0..12)
        .map(|_| (0..200).map(|_| w.line().1).collect())
        .collect();
    let (bufs, dicts) = shared_blocks(&blocks);
    assert!(!dicts.is_empty());
    let mut shared_cols = 0;
    for (buf, lines) in bufs.iter().zip(&blocks) {
        let d = decode_block_in(buf, Some(&dicts)).unwrap();
        assert_eq!(&d.lines, lines);
        let r = BlockReader::open_in(buf, &dicts).unwrap();
        for c in 0..r.column_count() {
            if !r.column_encoding(c).is_some_and(Encoding::is_shared) {
                continue;
            }
            shared_cols += 1;
            let si = r.shared_index_view(c).unwrap();
            if si.is_skeleton() {
                continue;
            }
            let idx = si.entries_all().unwrap();
            let (data, ends) = r.shared_strings(c, si.locals).unwrap();
            assert_eq!(ends.len(), si.locals);
            let vals = r.column_values(c).unwrap();
            let dict = r.shared_dict(c).unwrap();
            for (i, &e) in idx.iter().enumerate() {
                let e = e as usize;
                let want: &[u8] = if e < si.global_count {
                    dict.get(si.global(e).unwrap()).unwrap()
                } else {
                    let l = e - si.global_count;
                    let start = if l == 0 { 0 } else { ends[l - 1] as usize };
                    &data[start..ends[l] as usize]
                };
                assert_eq!(vals.get(i), want);
            }
        }
        // Without its dictionaries a block with shared columns is an error.
        if BlockReader::open_in(buf, &dicts)
            .unwrap()
            .header()
            .columns
            .iter()
            .any(|c| c.shared.is_some())
        {
            assert!(decode_block(buf).is_err());
        }
    }
    assert!(shared_cols > 12, "workload columns recur across blocks");
    // A dictionary that lacks the ids a block refers to is damage.
    let short = shared::SharedDicts::default();
    assert!(bufs
        .iter()
        .skip(1)
        .any(|b| decode_block_in(b, Some(&short)).is_err()));
}

#[test]
fn shared_dictionary_blocks_detect_corruption() {
    let mut w = Workload::new(21);
    let blocks: Vec<Vec<String>> = (0..3)
        .map(|_| (0..40).map(|_| w.line().1).collect())
        .collect();
    let (bufs, dicts) = shared_blocks(&blocks);
    let buf = &bufs[2];
    assert!(decode_block_in(buf, Some(&dicts)).is_ok());
    let mut rng = testgen::Rng::new(3);
    for i in 0..buf.len() {
        let mut bad = buf.clone();
        bad[i] ^= 1 << rng.below(8);
        assert!(
            decode_block_in(&bad, Some(&dicts)).is_err(),
            "flip at {i} undetected"
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn shared_dictionaries_keep_arbitrary_lines(blocks in prop::collection::vec(prop::collection::vec(prop::sample::select(vec![
        r#"{"a":"x","b":1}"#.to_string(),
        r#"{"a":"y","b":"two"}"#.to_string(),
        r#"{"a":"x y","c":[1]}"#.to_string(),
        r#"{"a":"\"q\"","b":"x"}"#.to_string(),
        "plain".to_string(),
        r#"{"a":""}"#.to_string(),
    ]), 1..20), 1..6)) {
        let (bufs, dicts) = shared_blocks(&blocks);
        for (buf, lines) in bufs.iter().zip(&blocks) {
            prop_assert_eq!(&decode_block_in(buf, Some(&dicts)).unwrap().lines, lines);
        }
    }

    #[test]
    fn arbitrary_strings_round_trip(lines in prop::collection::vec(any::<String>(), 0..40), md in prop::collection::vec((any::<String>(), any::<String>()), 0..3)) {
        let rows: Vec<_> = lines.iter().enumerate().map(|(i, l)| (i as i64, l.as_str(), if i % 3 == 0 { md.clone() } else { Vec::new() })).collect();
        let buf = encode(&rows, 1);
        let d = decode_block(&buf).unwrap();
        prop_assert_eq!(d.metadata, rows.iter().map(|r| r.2.clone()).collect::<Vec<_>>());
        prop_assert_eq!(d.lines, lines);
    }

    #[test]
    fn generated_json_round_trips(objs in prop::collection::vec(json_object(), 1..30)) {
        let rows: Vec<_> = objs.iter().map(|l| (0, l.as_str(), Vec::new())).collect();
        let buf = encode(&rows, 1);
        prop_assert_eq!(decode_block(&buf).unwrap().lines, objs);
    }

    #[test]
    fn may_contain_has_no_false_negatives(
        lines in prop::collection::vec(word_line(), 1..20),
        pick in any::<prop::sample::Index>(),
        a in any::<prop::sample::Index>(),
        b in any::<prop::sample::Index>(),
        other in word_line(),
    ) {
        let rows: Vec<_> = lines.iter().map(|l| (0, l.as_str(), Vec::new())).collect();
        let buf = encode(&rows, 1);
        let line = &lines[pick.index(lines.len())];
        let (mut x, mut y) = (a.index(line.len() + 1), b.index(line.len() + 1));
        if x > y { std::mem::swap(&mut x, &mut y); }
        if let Some(needle) = line.get(x..y) {
            prop_assert!(block_may_contain(&buf, &[needle.to_string()]), "needle {:?}", needle);
            prop_assert!(block_may_contain(&buf, &[needle.to_string(), line.clone()]));
        }
        let holds = lines.iter().any(|l| l.contains(other.as_str()));
        if holds {
            prop_assert!(block_may_contain(&buf, &[other]));
        }
    }

    #[test]
    fn needle_probe_agrees_with_sources(
        seed in any::<u64>(),
        pick in any::<prop::sample::Index>(),
        a in any::<prop::sample::Index>(),
        len in 1usize..40,
        noise in "[a-z0-9_ :\"-]{0,12}",
    ) {
        let mut w = Workload::new(seed);
        let lines: Vec<String> = (0..50).map(|_| w.line().1).collect();
        let rows: Vec<_> = lines.iter().map(|l| (0, l.as_str(), Vec::new())).collect();
        let buf = encode(&rows, 1);
        let h = super::layout::BlockHeader::decode(&buf).unwrap();
        let bloom = h.bloom_bytes(&buf);
        let line = &lines[pick.index(lines.len())];
        let x = a.index(line.len());
        let mut y = (x + len).min(line.len());
        while !line.is_char_boundary(y) { y -= 1; }
        for needle in [line.get(x..y).unwrap_or("").to_string(), noise.clone(), format!("{}{noise}", line.get(x..y).unwrap_or(""))] {
            let probe = super::prune::NeedleProbe::new(needle.as_bytes());
            prop_assert_eq!(
                probe.may_match(&h, bloom),
                super::prune::needle_sources_in(&h, bloom, needle.as_bytes()).is_some(),
                "needle {:?}", needle
            );
        }
    }

    #[test]
    fn may_contain_finds_any_substring_of_realistic_lines(
        seed in any::<u64>(),
        rows in 1usize..120,
        pick in any::<prop::sample::Index>(),
        a in any::<prop::sample::Index>(),
        len in 1usize..48,
    ) {
        let mut w = Workload::new(seed);
        let lines: Vec<String> = (0..rows).map(|_| w.line().1).collect();
        let rows: Vec<_> = lines.iter().map(|l| (0, l.as_str(), Vec::new())).collect();
        let buf = encode(&rows, 1);
        let line = &lines[pick.index(lines.len())];
        let x = a.index(line.len());
        let mut y = (x + len).min(line.len());
        while !line.is_char_boundary(y) { y -= 1; }
        if let Some(needle) = line.get(x..y) {
            prop_assert!(block_may_contain(&buf, &[needle.to_string()]), "needle {:?}", needle);
        }
    }

    #[test]
    fn random_flips_never_panic(seed in any::<u64>(), flips in 1usize..8) {
        let mut w = Workload::new(seed);
        let rows: Vec<_> = (0..20).map(|_| w.line()).collect();
        let refs: Vec<_> = rows.iter().map(|(t, l)| (*t, l.as_str(), Vec::new())).collect();
        let mut buf = encode(&refs, 1);
        let mut rng = testgen::Rng::new(seed);
        for _ in 0..flips {
            let i = rng.below(buf.len() as u64) as usize;
            buf[i] = rng.next() as u8;
        }
        let _ = decode_block(&buf);
        let _ = block_may_contain(&buf, &[" info ".into()]);
        if let Ok(r) = BlockReader::open(&buf) {
            let _ = r.column("level");
        }
    }
}

/// Lines from a small vocabulary, as JSON objects or plain text, so that
/// needles drawn from them often span keys, values and punctuation.
fn word_line() -> impl Strategy<Value = String> {
    let word = prop::sample::select(vec![
        "info",
        "error",
        "a",
        "b_c",
        "é",
        "42",
        "4.5",
        "ab12cd34",
        "10.0.0.1",
        "x-y",
        "",
        "47427f18eca769601347c34f1e0dc5fd",
        "connection",
        "usr_00001236",
        "ABCDEF0123",
        "1888db50-d74e-4f1c-ba74-84d2e3aa580a",
    ]);
    // Words of plain-text lines that the text templates split
    // (`text_shape`): `key=value`, ids in brackets and quotes, punctuation.
    let text_word = prop::sample::select(vec![
        "k=42",
        "id=ab12cd34",
        "ip=10.0.0.1,",
        "[pool-3-thread-7]",
        "(x1)",
        "'q9'",
        "took=4.5ms:",
        "k=v=1",
        "=7",
        "\"7\"",
        "a]b[1",
    ]);
    let plain =
        prop::collection::vec(prop_oneof![word.clone(), text_word], 0..6).prop_map(|w| w.join(" "));
    let json = prop::collection::vec(
        (
            prop::sample::select(vec!["k", "level", "n", "id"]),
            word,
            any::<bool>(),
        ),
        0..5,
    );
    // `uid` values share a prefix: exercises PrefixedDecimal pruning.
    let uid = prop::option::of((prop::sample::select(vec!["u_", "usr-", "é"]), -5i64..2000));
    let json = (json, uid).prop_map(|(kv, uid)| {
        let body: Vec<String> = uid
            .map(|(p, n)| format!(r#""uid":"{p}{n}""#))
            .into_iter()
            .chain(kv.iter().map(|(k, v, q)| {
                if *q || v.is_empty() {
                    format!(r#""{k}":"{v}""#)
                } else {
                    format!(r#""{k}": {v}"#)
                }
            }))
            .collect();
        format!("{{{}}}", body.join(","))
    });
    prop_oneof![plain, json]
}

fn json_value(depth: u32) -> BoxedStrategy<String> {
    let leaf = prop_oneof![
        any::<i64>().prop_map(|v| v.to_string()),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(|v| v.to_string()),
        "[a-zA-Z0-9 _\\-.:/é]{0,12}".prop_map(|s| format!("\"{s}\"")),
        prop::sample::select(vec![
            "true",
            "false",
            "null",
            "1.50",
            "1e3",
            "-0",
            "\"\\u00e9\"",
            "\"a\\\"b\"",
            "[]",
            "[1, \"x\"]"
        ])
        .prop_map(String::from),
    ];
    if depth == 0 {
        return leaf.boxed();
    }
    prop_oneof![3 => leaf, 1 => json_object_at(depth - 1)].boxed()
}

fn json_object_at(depth: u32) -> BoxedStrategy<String> {
    let ws = prop::sample::select(vec!["", "", " ", "\n  "]);
    prop::collection::vec(("[a-z_.]{0,6}", json_value(depth), ws), 0..6)
        .prop_map(|kv| {
            let body: Vec<String> = kv
                .iter()
                .map(|(k, v, w)| format!("{w}\"{k}\":{w}{v}"))
                .collect();
            format!("{{{}}}", body.join(","))
        })
        .boxed()
}

fn json_object() -> BoxedStrategy<String> {
    json_object_at(2)
}

/// Measurement, not a check (throughput in CPU time of this thread): `cargo test --release -p runakefli-storage block::tests::measure -- --ignored --nocapture`.
#[test]
#[ignore]
fn measure() {
    let only: Option<usize> = std::env::var("MEASURE_ROWS")
        .ok()
        .and_then(|v| v.parse().ok());
    for (rows_per_block, level, blocks) in [
        (400usize, 3, 250usize),
        (30, -3, 2000),
        (30, 1, 2000),
        (30, 3, 2000),
        (1000, 3, 60),
        (1000, 9, 60),
        (1000, 15, 30),
        (2800, -3, 20),
        (2800, 3, 20),
    ] {
        if only.is_some_and(|o| o != rows_per_block) {
            continue;
        }
        let mut streams: Vec<Workload> = (0..50).map(|s| Workload::new(s as u64 + 1)).collect();
        let mut input: Vec<Vec<(i64, String)>> = Vec::new();
        let mut bits = 0.0;
        for b in 0..blocks {
            let w = &mut streams[b % 50];
            let before = w.bits;
            input.push((0..rows_per_block).map(|_| w.line()).collect());
            bits += w.bits - before;
        }
        let raw: usize = input.iter().flatten().map(|(_, l)| l.len()).sum();
        let lines = (blocks * rows_per_block) as f64;
        let mut b = BlockBuilder::new();
        let mut encoded = Vec::new();
        let t = cpu_now();
        for rows in &input {
            let mut out = Vec::new();
            for (ts, l) in rows {
                b.push(*ts, l, &[]);
            }
            b.finish(level, &mut out);
            encoded.push(out);
        }
        let enc_s = cpu_now() - t;
        let t = cpu_now();
        let mut n = 0;
        for e in &encoded {
            n += decode_block(e).unwrap().lines.len();
        }
        let dec_s = cpu_now() - t;
        assert_eq!(n as f64, lines);
        let t = cpu_now();
        let mut errors = 0;
        for e in &encoded {
            let r = BlockReader::open(e).unwrap();
            let c = r.column("level").unwrap().unwrap();
            errors += c.iter().filter(|v| *v == Some("error")).count();
        }
        let col_s = cpu_now() - t;
        assert!(errors > 0);
        let total: usize = encoded.iter().map(|e| e.len()).sum();
        let bloom: usize = encoded
            .iter()
            .map(|e| layout::BlockHeader::decode(e).unwrap().bloom.len())
            .sum();
        println!(
            "rows/block {rows_per_block:5} zstd {level:2}: {:.1} B/line raw, {:.1} B/line stored ({:.1} bloom), info {:.1} B/line, encode {:.0} MB/s, decode {:.0} MB/s, level column {:.0} Mlines/s",
            raw as f64 / lines,
            total as f64 / lines,
            bloom as f64 / lines,
            bits / 8.0 / lines,
            raw as f64 / enc_s / 1e6,
            raw as f64 / dec_s / 1e6,
            lines / col_s / 1e6,
        );
    }
}

/// Per-column size breakdown of one 1,000-row block (measurement aid).
#[test]
#[ignore]
fn breakdown() {
    let mut w = Workload::new(1);
    let mut b = BlockBuilder::new();
    for _ in 0..1000 {
        let (ts, l) = w.line();
        b.push(ts, &l, &[]);
    }
    let mut buf = Vec::new();
    b.finish(9, &mut buf);
    let r = BlockReader::open(&buf).unwrap();
    let h = layout::BlockHeader::decode(&buf).unwrap();
    println!("total {} bytes, frames {:?}", buf.len(), h.frames);
    for name in r.column_names() {
        let c = r.column(&name).unwrap().unwrap();
        let vals: Vec<&[u8]> = c.iter().flatten().map(|s| s.as_bytes()).collect();
        let ts: Vec<i64> = c
            .iter()
            .zip(r.timestamps())
            .filter(|(v, _)| v.is_some())
            .map(|(_, t)| *t)
            .collect();
        let mut p = Vec::new();
        let e = encoding::encode_column(&vals, &ts, &mut p);
        let z = zstd::bulk::compress(&p, 9).unwrap().len();
        println!("{name:24} {:?} payload {} zstd {}", e.encoding, p.len(), z);
    }
}

/// CPU seconds used by this thread (robust to other load on the machine).
fn cpu_now() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes into the valid timespec we pass.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

/// Where the bytes of a 30-row block go (measurement aid).
#[test]
#[ignore]
fn breakdown_small() {
    let mut w = Workload::new(2);
    let mut b = BlockBuilder::new();
    for _ in 0..30 {
        let (ts, l) = w.line();
        b.push(ts, &l, &[]);
    }
    let mut buf = Vec::new();
    b.finish(3, &mut buf);
    let h = layout::BlockHeader::decode(&buf).unwrap();
    let body = h.body_start;
    let r = BlockReader::open(&buf).unwrap();
    println!(
        "block {} B: header+crc {} (bloom {}), frames {:?}",
        buf.len(),
        body,
        h.bloom.len(),
        h.frames
    );
    let names = r.column_names();
    println!("{} columns, {} names", h.columns.len(), names.len());
}

/// Rows of the committed golden block `testdata/block_v1.bin`.
type OwnedRow = (i64, String, Vec<(String, String)>);

fn golden_rows() -> Vec<OwnedRow> {
    let mut w = Workload::new(42);
    let mut rows: Vec<_> = AWKWARD
        .iter()
        .enumerate()
        .map(|(i, l)| (i as i64 * 1000, l.to_string(), Vec::new()))
        .collect();
    rows[3].2 = vec![
        ("trace_id".into(), "abc123".into()),
        ("pod".into(), "p-1".into()),
    ];
    let base = rows.len() as i64 * 1000;
    rows.extend((0..40).map(|_| {
        let (ts, l) = w.line();
        (base + ts, l, Vec::new())
    }));
    rows
}

/// Regenerates the golden file; run only when the format version changes
/// (and then keep the old file for the old version).
#[test]
#[ignore]
fn write_golden_block() {
    let rows = golden_rows();
    let refs: Vec<Row<'_>> = rows
        .iter()
        .map(|(t, l, m)| (*t, l.as_str(), m.clone()))
        .collect();
    let buf = encode(&refs, 9);
    std::fs::write(
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/src/block/testdata/block_v1.bin"
        ),
        buf,
    )
    .unwrap();
}

#[test]
fn golden_v1_block_still_decodes() {
    let buf = include_bytes!("testdata/block_v1.bin");
    let d = decode_block(buf).unwrap();
    let rows = golden_rows();
    assert_eq!(d.ts, rows.iter().map(|r| r.0).collect::<Vec<_>>());
    assert_eq!(
        d.lines,
        rows.iter().map(|r| r.1.clone()).collect::<Vec<_>>()
    );
    assert_eq!(
        d.metadata,
        rows.iter().map(|r| r.2.clone()).collect::<Vec<_>>()
    );
    assert!(!block_may_contain(buf, &[" zebra ".into()]));
    assert!(block_may_contain(buf, &["\"level\":\"info\"".into()]));
}

#[test]
fn compressed_frames_read_from_the_file_equal_those_read_in_place() {
    use std::io::Write;
    let mut b = BlockBuilder::new();
    let mut w = Workload::new(11);
    for i in 0..300i64 {
        let (_, l) = w.line();
        b.push(5_000 + i * 7, &l, &[]);
    }
    let mut buf = Vec::new();
    b.finish(3, &mut buf);
    let header = || HeaderRef::Owned(layout::BlockHeader::decode(&buf).unwrap());
    assert!(
        header()
            .frames
            .iter()
            .skip(1)
            .any(|f| f.codec == layout::CODEC_ZSTD),
        "the block has compressed data frames"
    );
    let in_place = BlockReader::with_context(&buf, header(), None, None).unwrap();
    // The block at offset 100 of a file.
    let mut file = tempfile::tempfile().unwrap();
    file.write_all(&[0u8; 100]).unwrap();
    file.write_all(&buf).unwrap();
    let from_file = BlockReader::with_context(&buf, header(), None, None)
        .unwrap()
        .read_compressed_from(reader::BlockFile {
            file: &file,
            offset: 100,
        });
    assert_eq!(from_file.lines().unwrap(), in_place.lines().unwrap());
    // A file whose bytes differ from the block's: its compressed frames
    // fail their checksums, so they were read from the file.
    let other = tempfile::tempfile().unwrap();
    other.set_len(100 + buf.len() as u64).unwrap();
    let wrong = BlockReader::with_context(&buf, header(), None, None)
        .unwrap()
        .read_compressed_from(reader::BlockFile {
            file: &other,
            offset: 100,
        });
    assert!(wrong.lines().is_err());
}

/// Every kept-row selection rebuilds the same lines row by row
/// ([`BlockReader::lines_at`]) as by whole columns: workload lines (shared,
/// skeleton and typed columns), lines of other shapes mixed in, and
/// blocks with and without shared dictionaries.
#[test]
fn sparse_rebuilds_match_whole_column_rebuilds() {
    let mut w = Workload::new(9);
    let mut blocks: Vec<Vec<String>> = Vec::new();
    for b in 0..3 {
        blocks.push(
            (0..160)
                .map(|i| match (i + b) % 23 {
                    0 => "plain text line 42".to_string(),
                    7 => format!(r#"{{"a":"x{i}","n":{i}}}"#),
                    _ => w.line().1,
                })
                .collect(),
        );
    }
    let (bufs, dicts) = shared_blocks(&blocks);
    let mut rng = testgen::Rng::new(5);
    for (k, lines) in blocks.iter().enumerate() {
        let rows: Vec<_> = lines.iter().map(|l| (0, l.as_str(), Vec::new())).collect();
        let own = encode(&rows, 1);
        for (buf, dicts) in [(&bufs[k], Some(&dicts)), (&own, None)] {
            let r = BlockReader::with_header_in(
                buf,
                HeaderRef::Owned(super::layout::BlockHeader::decode(buf).unwrap()),
                dicts,
            )
            .unwrap();
            assert_eq!(&r.lines().unwrap(), lines);
            for (row, line) in lines.iter().enumerate() {
                assert_eq!(r.lines_at(&[row]).unwrap(), vec![line.clone()]);
            }
            for every in [2, 5, 17, 40, 160] {
                let keep: Vec<bool> = (0..lines.len())
                    .map(|_| rng.below(every as u64) == 0)
                    .collect();
                let got = r.lines_where(&keep).unwrap();
                for (i, line) in got.iter().enumerate() {
                    assert_eq!(line.as_ref(), keep[i].then_some(&lines[i]), "row {i}");
                }
            }
            assert!(r.lines_at(&[3, 2]).is_err(), "rows out of order");
            assert!(r.lines_at(&[lines.len()]).is_err(), "row out of range");
        }
    }
}

/// A block wider than the columns whose bloom keys a needle probe works out
/// beforehand: needles from its last columns, and ones it does not hold,
/// get the same answer from the probe as from the per-source check.
/// Forty JSON lines of 90 fields each (words, numbers, ids): blocks with
/// more columns than a needle probe keys beforehand.
fn wide_lines() -> Vec<String> {
    (0..40)
        .map(|i| {
            let fields: Vec<String> = (0..90)
                .map(|f| match f % 3 {
                    0 => format!("\"f{f}\":\"word{f}x{i} tail{f}\""),
                    1 => format!("\"f{f}\":{}", i * 1000 + f),
                    _ => format!("\"f{f}\":\"id_{}\"", 7000 + i * 90 + f),
                })
                .collect();
            format!("{{{}}}", fields.join(","))
        })
        .collect()
}

#[test]
fn needle_probe_agrees_with_sources_past_its_keyed_columns() {
    let lines = wide_lines();
    let rows: Vec<_> = lines.iter().map(|l| (0, l.as_str(), Vec::new())).collect();
    let buf = encode(&rows, 1);
    let h = super::layout::BlockHeader::decode(&buf).unwrap();
    assert!(h.columns.len() > 80, "{} columns", h.columns.len());
    let bloom = h.bloom_bytes(&buf);
    let mut needles = Vec::new();
    for f in 60..90 {
        needles.push(format!("word{f}x7"));
        needles.push(format!("word{f}x7 tail{f}"));
        needles.push(format!("tail{f}"));
        needles.push(format!("{}", 7 * 1000 + f));
        needles.push(format!("id_{}", 7000 + 7 * 90 + f));
        needles.push(format!("ord{f}x3"));
        needles.push(format!("word{f}x99"));
        needles.push(format!("id_{}", 999_999 + f));
        needles.push(format!("tail{f}zz"));
        // Whole tokens (a non-token byte on each side): looked up in the
        // column's bloom by key.
        needles.push(format!(" tail{f}\""));
        needles.push(format!("\"id_{}\"", 7000 + 7 * 90 + f));
        needles.push(format!(":{},", 7 * 1000 + f));
        needles.push(format!(" tail{f}9\""));
        needles.push(format!("\"id_{}\"", 999_999 + f));
        needles.push(format!(":{}9,", 7 * 1000 + f));
    }
    let mut held = 0;
    for needle in &needles {
        let probe = super::prune::NeedleProbe::new(needle.as_bytes());
        let want = super::prune::needle_sources_in(&h, bloom, needle.as_bytes()).is_some();
        assert_eq!(probe.may_match(&h, bloom), want, "needle {needle:?}");
        if lines.iter().any(|l| l.contains(needle.as_str())) {
            assert!(want, "needle {needle:?} is in the block");
            held += 1;
        }
    }
    assert!(held >= 60, "{held} needles held");
    let absent = needles
        .iter()
        .filter(|n| !super::prune::NeedleProbe::new(n.as_bytes()).may_match(&h, bloom))
        .count();
    assert!(absent > 20, "the blooms rule out absent needles ({absent})");
}

/// The per-block view of a needle built from fragments worked out once
/// (`NeedleFrags`, kept per query for each boundary mask) says, for every
/// column and fragment, what the full per-block analysis says; asked again,
/// it answers the same from its memo (and past its 128 memo slots, anew).
/// Needles for the pruning tests over [`wide_lines`] and workload blocks:
/// inside one value, across a key and its value, across templates' pieces.
const PRUNING_NEEDLES: [&str; 10] = [
    "word70x7 tail70",
    "tail81\",\"f82\":82",
    "id_7700",
    "\"f3\":3",
    "connection timeout",
    "\"level\":\"error\"",
    "GET /api",
    "usr_0000",
    "x7 t",
    ":1,\"",
];

#[test]
fn lazy_sources_from_kept_fragments_agree_with_full_sources() {
    use super::prune::{needle_sources_in, LazySources, NeedleFrags};
    let wide = wide_lines();
    let mut w = Workload::new(11);
    let workload: Vec<String> = (0..300).map(|_| w.line().1).collect();
    let mut blocks = Vec::new();
    for lines in [&wide, &workload] {
        let rows: Vec<_> = lines.iter().map(|l| (0, l.as_str(), Vec::new())).collect();
        blocks.push(encode(&rows, 1));
    }
    let needles = PRUNING_NEEDLES;
    let mut compared = 0;
    for buf in &blocks {
        let h = layout::BlockHeader::decode(buf).unwrap();
        let bloom = h.bloom_bytes(buf);
        for needle in needles {
            let needle = needle.as_bytes();
            let frags = std::rc::Rc::new(NeedleFrags::new(&h, needle));
            assert!(frags.fits(&h));
            let lazy = LazySources::with_frags(&h, bloom, frags);
            let Some(full) = needle_sources_in(&h, bloom, needle) else {
                continue;
            };
            for round in 0..2 {
                for c in 0..h.columns.len() {
                    let all = full.iter().all(|f| f.columns[c]);
                    assert_eq!(
                        lazy.column_may_hold(c, 0, needle.len()),
                        all,
                        "column {c}, needle {needle:?}, round {round}"
                    );
                    for f in &full {
                        assert_eq!(lazy.column_may_hold(c, f.start, f.end), f.columns[c]);
                        compared += 1;
                    }
                }
            }
        }
    }
    assert!(compared > 1000, "{compared} answers compared");
    // Fragments are cut by the header's boundary bytes: a block recording
    // other ones needs its own.
    let a = layout::BlockHeader::decode(&blocks[0]).unwrap();
    let mut b = layout::BlockHeader::decode(&blocks[1]).unwrap();
    assert!(NeedleFrags::new(&a, b"x").fits(&b), "same boundary bytes");
    b.boundaries ^= 1 << 3;
    assert!(!NeedleFrags::new(&a, b"x").fits(&b));
    b.boundaries |= 1 << 15;
    assert!(!NeedleFrags::new(&a, b"x").fits(&b), "bit 15: any column");
    assert!(NeedleFrags::new(&b, b"x").fits(&b));
}

/// A block's packed probe head judges every needle as its header does, so
/// the read path may probe from the part's packed heads alone; a block the
/// packing cannot describe (a PrefixedDecimal column's prefix, inexact
/// boundary bytes) is marked for its header.
/// 200 JSON lines whose `user` ids (`usr_` and eight digits) make a
/// PrefixedDecimal column.
fn prefixed_lines() -> Vec<String> {
    (0..200)
        .map(|i| {
            format!(
                "{{\"user\":\"usr_{:08}\",\"n\":{i},\"msg\":\"hello word{}\"}}",
                i * 37,
                i % 7
            )
        })
        .collect()
}

#[test]
fn packed_heads_judge_needles_as_their_headers() {
    use super::packed_head::{PackedColumns, ProbeBlock};
    use super::prune::NeedleProbe;
    let wide = wide_lines();
    let mut w = Workload::new(12);
    let workload: Vec<String> = (0..400).map(|_| w.line().1).collect();
    let prefixed = prefixed_lines();
    let mut needles: Vec<String> = PRUNING_NEEDLES
        .iter()
        .chain(&[
            "timeout",
            "0123456789abcdef0123456789abcdef",
            "zzzz-not-there",
            "hello word3",
        ])
        .map(|s| s.to_string())
        .collect();
    // Needles cut from the lines themselves: present, across boundaries.
    for l in workload.iter().chain(&wide).step_by(23) {
        for (a, b) in [(5, 40), (60, 70), (10, 11), (100, 133)] {
            if let Some(t) = l.get(a..b.min(l.len())) {
                needles.push(t.to_string());
            }
        }
    }
    let mut judged = [0usize; 2];
    let mut prefixed_columns = 0;
    for lines in [&wide, &workload, &prefixed] {
        let rows: Vec<_> = lines.iter().map(|l| (0, l.as_str(), Vec::new())).collect();
        let buf = encode(&rows, 1);
        let h = layout::BlockHeader::decode(&buf).unwrap();
        let mut block = ProbeBlock::of(&h);
        prefixed_columns += h
            .columns
            .iter()
            .filter(|c| c.encoding == encoding::Encoding::PrefixedDecimal)
            .count();
        let mut columns = PackedColumns::default();
        block.packed &= columns.pack(&h);
        assert!(block.packed);
        columns.freeze();
        assert_eq!(block.bloom_bytes(&buf), h.bloom_bytes(&buf));
        let head = columns.head(block, 0, h.columns.len()).unwrap();
        for needle in &needles {
            let probe = NeedleProbe::new(needle.as_bytes());
            let want = probe.may_match(&h, h.bloom_bytes(&buf));
            assert_eq!(
                probe.may_match_packed(head, block.bloom_bytes(&buf)),
                want,
                "needle {needle:?}"
            );
            judged[usize::from(want)] += 1;
        }
    }
    assert!(prefixed_columns >= 3, "prefixes packed: {prefixed_columns}");
    assert!(
        judged[0] > 3 && judged[1] > 20,
        "both answers seen: {judged:?}"
    );
    // Inexact boundary bytes (bit 15) send a block to its header.
    let rows: Vec<_> = wide.iter().map(|l| (0, l.as_str(), Vec::new())).collect();
    let buf = encode(&rows, 1);
    let mut h = layout::BlockHeader::decode(&buf).unwrap();
    h.boundaries |= 1 << 15;
    assert!(!ProbeBlock::of(&h).packed);
}
/// A needle a block lacks is judged from the first key of each bloom lookup
/// alone ([`super::prune::NeedleProbe::answer_from_first_keys`]: one batch of
/// bloom reads instead of a walk that waits on each), and that answer is the
/// full walk's; a needle the block holds is left to the full walk.
#[test]
fn absent_needles_are_judged_from_their_first_keys() {
    use super::prune::NeedleProbe;
    let mut w = Workload::new(21);
    let lines: Vec<String> = (0..400).map(|_| w.line().1).collect();
    let rows: Vec<_> = lines.iter().map(|l| (0, l.as_str(), Vec::new())).collect();
    let buf = encode(&rows, 1);
    let h = layout::BlockHeader::decode(&buf).unwrap();
    let bloom = h.bloom_bytes(&buf);
    let mut shortcut = 0;
    let absent: Vec<String> = (0..200)
        .map(|i| match i % 4 {
            0 => format!("{:08x}-{:04x}-4{:03x}-beef-{:012x}", i * 7919, i, i, i * 31),
            1 => format!("q{i}z8x{i}"),
            2 => format!("{}", 7_300_000_000_000u64 + i * 104_729),
            _ => format!("nothing like word{i}"),
        })
        .filter(|n| !lines.iter().any(|l| l.contains(n.as_str())))
        .collect();
    assert!(absent.len() > 150);
    for needle in &absent {
        let probe = NeedleProbe::new(needle.as_bytes());
        let full = probe.may_match(&h, bloom);
        if let Some(answer) = probe.answer_from_first_keys(&h, bloom) {
            assert_eq!(answer, full, "needle {needle:?}");
            shortcut += 1;
        }
    }
    assert!(
        shortcut * 10 >= absent.len() * 9,
        "{shortcut} of {} absent needles judged from first keys",
        absent.len()
    );
    // A needle cut from a line: present, so some first key is there.
    for l in lines.iter().step_by(37) {
        let needle = &l[l.len() / 3..l.len() / 3 + 12];
        let probe = NeedleProbe::new(needle.as_bytes());
        assert!(probe.may_match(&h, bloom), "needle {needle:?}");
        assert_ne!(
            probe.answer_from_first_keys(&h, bloom),
            Some(false),
            "needle {needle:?}"
        );
    }
}

/// A needle whose first keys the blocks hold stops trying the first-keys shortcut after its trial, and its answers
/// stay those of the full walk; an absent needle keeps trying it.
#[test]
fn needles_with_common_first_keys_stop_trying_the_shortcut() {
    use super::prune::NeedleProbe;
    let mut w = Workload::new(22);
    let lines: Vec<String> = (0..200).map(|_| w.line().1).collect();
    let rows: Vec<_> = lines.iter().map(|l| (0, l.as_str(), Vec::new())).collect();
    let buf = encode(&rows, 1);
    let h = layout::BlockHeader::decode(&buf).unwrap();
    let bloom = h.bloom_bytes(&buf);
    // A needle cut from a line whose first keys the bloom holds.
    let present = lines
        .iter()
        .flat_map(|l| (0..l.len() - 12).step_by(7).map(move |i| &l[i..i + 12]))
        .map(|n| NeedleProbe::new(n.as_bytes()))
        .find(|p| p.answer_from_first_keys(&h, bloom).is_none())
        .expect("a needle whose first keys are present");
    let absent = NeedleProbe::new(b"q9z8x7w6v5-nowhere");
    for _ in 0..100 {
        assert!(present.may_match(&h, bloom));
        assert!(!absent.may_match(&h, bloom));
    }
    assert!(!present.tries_first_keys());
    assert!(absent.tries_first_keys());
}

/// Plain-text lines are split into a text template and `Text` columns
/// named by key or position; they round-trip, a rare id in them is ruled out
/// by its column's bloom keys when absent, and a phrase with a word the
/// block lacks is ruled out by the template tokens.
#[test]
fn plain_text_lines_split_into_text_templates() {
    let lines: Vec<String> = (0..300u32)
        .map(|i| {
            format!(
                "2026-12-04T16:10:{:02}.{:03}Z {} [pool-3-thread-{}] c.s.PaymentService - {} session={:010x} ip=10.1.{}.{} order={} took={}.{}ms",
                i % 60,
                i,
                ["INFO", "WARN"][(i % 2) as usize],
                i % 9,
                ["payment captured", "card declined by issuer", "retry budget exhausted"][(i % 3) as usize],
                u64::from(i).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 24,
                i % 7,
                i % 250,
                u64::from(i) * 1_000_003 + 17,
                i % 90,
                i % 10
            )
        })
        .collect();
    let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
    let buf = round_trip(&refs);
    let header = super::layout::BlockHeader::decode(&buf).unwrap();
    assert_eq!(header.templates.len(), 1, "one structure");
    let text_cols: Vec<String> = header
        .columns
        .iter()
        .filter(|c| c.kind == super::layout::ColumnKind::Text)
        .map(|c| String::from_utf8_lossy(&c.name).into_owned())
        .collect();
    assert_eq!(
        text_cols,
        ["#0", "~0", "#1", "~1", "session", "ip", "order", "took"],
        "{:?}",
        header.columns
    );
    assert!(!header
        .columns
        .iter()
        .any(|c| c.kind == super::layout::ColumnKind::Line));
    assert_eq!(
        header.boundaries & (1 << 15),
        0,
        "every byte next to a slot has its bit"
    );
    let may = |s: &str| block_may_contain(&buf, &[s.to_string()]);
    for i in [0u64, 150, 299] {
        let session = format!("{:010x}", i.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 24);
        let order = (i * 1_000_003 + 17).to_string();
        assert!(may(&session) && may(&order) && may(&session[2..8]));
        assert!(may(&format!("session={session} ip=")));
    }
    let absent_sessions = (1000u64..1200)
        .map(|i| format!("{:010x}", i.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 24))
        .filter(|s| !lines.iter().any(|l| l.contains(s.as_str())))
        .collect::<Vec<_>>();
    let kept = absent_sessions.iter().filter(|s| may(s)).count();
    assert!(
        absent_sessions.len() > 190 && kept * 10 < absent_sessions.len(),
        "{kept} of {} absent sessions kept",
        absent_sessions.len()
    );
    assert!(may("card declined") && may("declined by issuer session="));
    assert!(!may("zyzzyvas declined"), "a word no template or value has");
}

/// Long numbers and hex ids (Decimal and Hex columns keep no grams) carry
/// stride grams: a run of 8 or more bytes anywhere inside one of their
/// tokens is found, and one that no value holds is ruled out in most
/// blocks (all four alignments must miss).
#[test]
fn stride_grams_find_runs_inside_long_numbers_and_hex_ids() {
    let trace = |i: u64| {
        format!(
            "{:016x}{:016x}",
            i.wrapping_mul(0x9e37_79b9_7f4a_7c15),
            i.wrapping_mul(0xc2b2_ae3d_27d4_eb4f)
        )
    };
    let order = |i: u64| {
        (i.wrapping_mul(2_654_435_761) % 9_000_000_000_000_000 + 1_000_000_000_000_000).to_string()
    };
    let lines: Vec<String> = (0..300u64)
        .map(|i| {
            format!(
                r#"{{"trace":"{}","order_no":{},"msg":"ok"}}"#,
                trace(i),
                order(i)
            )
        })
        .collect();
    let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
    let buf = round_trip(&refs);
    let header = super::layout::BlockHeader::decode(&buf).unwrap();
    for name in ["trace", "order_no"] {
        let c = header
            .columns
            .iter()
            .find(|c| &c.name[..] == name.as_bytes())
            .unwrap();
        assert!(c.has_stride_grams, "{name}: {:?}", c.encoding);
    }
    let may = |s: &str| block_may_contain(&buf, &[s.to_string()]);
    for i in [0u64, 77, 299] {
        let (t, o) = (trace(i), order(i));
        for start in 0..6 {
            assert!(may(&t[start..start + 10]), "trace {t} at {start}");
            assert!(
                may(&t[start + 3..start + 3 + 8]),
                "trace {t} at {}",
                start + 3
            );
            assert!(may(&o[start..start + 9]), "order {o} at {start}");
        }
        assert!(may(&t) && may(&o));
    }
    let absent_hex: Vec<String> = (5000..5200u64)
        .map(|i| trace(i)[3..13].to_string())
        .filter(|n| !lines.iter().any(|l| l.contains(n.as_str())))
        .collect();
    let kept = absent_hex.iter().filter(|n| may(n)).count();
    assert!(
        kept * 4 < absent_hex.len(),
        "{kept} of {} absent hex runs kept",
        absent_hex.len()
    );
    let absent_digits: Vec<String> = (5000..5200u64)
        .map(|i| order(i)[2..16].to_string())
        .filter(|n| !lines.iter().any(|l| l.contains(n.as_str())))
        .collect();
    let kept = absent_digits.iter().filter(|n| may(n)).count();
    assert!(
        kept * 20 < absent_digits.len(),
        "{kept} of {} absent digit runs kept",
        absent_digits.len()
    );
}

/// A part's blocks repeat their column records: packing the same block
/// again adds ids, not records, and the heads of both copies read the same
/// columns; a PrefixedDecimal prefix is stored once.
#[test]
fn packed_columns_are_interned_across_blocks() {
    use super::packed_head::{PackedColumns, ProbeBlock};
    let lines = prefixed_lines();
    let rows: Vec<_> = lines.iter().map(|l| (0, l.as_str(), Vec::new())).collect();
    let buf = encode(&rows, 1);
    let h = layout::BlockHeader::decode(&buf).unwrap();
    let n = h.columns.len();
    assert!(
        h.columns
            .iter()
            .any(|c| c.encoding == encoding::Encoding::PrefixedDecimal),
        "the block has a prefixed column"
    );
    let mut packed = PackedColumns::default();
    assert!(packed.pack(&h));
    let (records, bytes) = (packed.distinct(), packed.heap_bytes());
    assert!(packed.pack(&h));
    packed.freeze();
    assert_eq!(packed.distinct(), records, "no record added by the copy");
    assert!(packed.distinct() <= n);
    let block = ProbeBlock::of(&h);
    let (a, b) = (
        packed.head(block, 0, n).unwrap(),
        packed.head(block, n, 2 * n).unwrap(),
    );
    for c in 0..n {
        assert_eq!(a.record(c), b.record(c));
        assert_eq!(a.prefix_of(c), b.prefix_of(c));
        assert_eq!(a.prefix_of(c), &*h.columns[c].prefix, "column {c}");
    }
    assert!(packed.head(block, n, 2 * n + 1).is_none());
    // The copy cost two bytes a column, not a record each.
    assert!(
        packed.heap_bytes() <= bytes + 2 * n + 64,
        "{bytes} → {}",
        packed.heap_bytes()
    );
}
