use super::*;

/// A demand written compactly: `*` all, `-` nothing, `{k: d, ...}` fields, `[d]` iterated,
/// `#[d]` indexed by number, `{}` only the shape. (Built from `fields`, `iter` and `index`;
/// `items` is derived.)
fn show(d: &Demand) -> String {
    match d {
        Demand::Nothing => "-".into(),
        Demand::All => "*".into(),
        Demand::Parts(p) => {
            let mut out = Vec::new();
            let fields: Vec<String> = p
                .fields
                .iter()
                .map(|(k, d)| format!("{}: {}", String::from_utf8_lossy(k), show(d)))
                .collect();
            if !fields.is_empty() || (p.iter.is_none() && p.index.is_none()) {
                out.push(format!("{{{}}}", fields.join(", ")));
            }
            if let Some(d) = &p.iter {
                out.push(format!("[{}]", show(d)));
            }
            if let Some(d) = &p.index {
                out.push(format!("#[{}]", show(d)));
            }
            out.join(" ")
        }
    }
}

fn demand(source: &str) -> String {
    show(&of_program(source))
}

#[test]
fn paths_read_only_the_fields_they_name() {
    assert_eq!(demand(".a"), "{a: *}");
    assert_eq!(demand(".a.b?"), "{a: {b: *}}");
    assert_eq!(demand(r#"."a b" | .["c\u0064"]"#), "{a b: {cd: *}}");
    assert_eq!(demand(".a[0]"), "{a: #[*]}");
    assert_eq!(demand(".a[-1]"), "{a: #[*]}");
    assert_eq!(demand(".a[]"), "{a: [*]}");
    assert_eq!(demand(".a[1:] | .[0].b"), "{a: #[{b: *}]}");
    assert_eq!(demand("1, $headers, $id"), "-");
}

#[test]
fn the_translator_benchmark_reads_three_fields_and_two_of_each_item() {
    assert_eq!(
        demand("{id: .id, total: (.items | map(.price * .qty) | add), customer: .customer.name}"),
        "{customer: {name: *}, id: *, items: [{price: *, qty: *}]}"
    );
}

#[test]
fn definitions_bindings_and_folds_are_followed() {
    assert_eq!(demand("def f(g): g | .b; f(.a)"), "{a: {b: *}}");
    assert_eq!(demand("def f($x): $x.b; f(.a)"), "{a: {b: *}}");
    assert_eq!(demand(".a as $v | def f: $v.c; f"), "{a: {c: *}}");
    assert_eq!(
        demand(". as {a: $x, b: [$y]} | $y.c"),
        "{a: -, b: #[{c: *}]}"
    );
    assert_eq!(
        demand("reduce .items[] as $i (0; . + $i.qty)"),
        "{items: [{qty: *}]}"
    );
    assert_eq!(demand("select(.ok) | .id"), "{id: *, ok: {}}");
    assert_eq!(demand(".a // .b"), "{a: *, b: *}");
    assert_eq!(demand("{a: .x, b: .y} | .b"), "{x: -, y: *}");
    assert_eq!(demand("first(.a)"), "*");
    assert_eq!(demand("map(map(.a))"), "[[{a: *}]]");
}

#[test]
fn what_the_analysis_does_not_follow_reads_everything_below_it() {
    for source in [
        ".",
        "..",
        "keys",
        "length",
        ".a |= 1",
        "del(.a)",
        "to_entries",
        "tojson",
        "paths",
        r#"getpath(["a"])"#,
        ". as $x | $x",
        ".[.k]",
        "def r: ., (.[] | r); r",
        ". as {(.k): $v} | $v",
    ] {
        assert_eq!(demand(source), "*", "{source}");
    }
    // The recursive call reads its input whole: `.a`, here.
    assert_eq!(demand("def r: .a | r; r"), "{a: *}");
    assert_eq!(demand(".a | keys"), "{a: *}");
    assert_eq!(demand(".a | .. "), "{a: *}");
    assert_eq!(demand(".a, (.b | length)"), "{a: *, b: *}");
}

#[test]
fn a_user_definition_shadows_the_standard_library() {
    assert_eq!(demand("def map(f): .z; map(.x)"), "{z: *}");
    assert_eq!(demand("def length: .n; length"), "{n: *}");
}

#[test]
fn iterating_an_object_keeps_every_field_with_what_is_read_of_it() {
    let d = of_program(".a, (.[] | .b)");
    let Demand::Parts(p) = &d else {
        panic!("{}", show(&d))
    };
    // `.a` reads all of `a`; every field, `a` included, has its `b` read.
    assert_eq!(p.fields.get(b"a").map(show), Some("*".to_owned()));
    assert_eq!(show(p.iter.as_ref().unwrap()), "{b: *}");
    assert_eq!(show(p.items.as_ref().unwrap()), "{b: *}");
}

#[test]
fn deep_or_expensive_programs_give_up_and_read_everything() {
    let nested = format!("{}.a{}", "def f: ".repeat(100), "; f".repeat(100));
    assert_eq!(demand(&nested), "*");
    let folds = format!("{}.a{}", "reduce .[] as $x (.; ".repeat(40), ")".repeat(40));
    assert!(matches!(demand(&folds).as_str(), "*" | "[*]"));
}

#[test]
fn a_branch_never_taken_still_counts() {
    // What the transform benchmark uses to time the parse of what a program reads.
    assert_eq!(
        demand("if false then .a.b else 1 end | empty"),
        "{a: {b: *}}"
    );
}

#[test]
fn the_analysis_of_deeply_nested_programs_fits_a_worker_thread_stack() {
    let programs = [
        format!("{}.a{}", "(".repeat(120), ")".repeat(120)),
        format!("{}.a{}", "map(".repeat(120), ")".repeat(120)),
        format!("{}.a{}", "[.b | ".repeat(60), "]".repeat(60)),
        format!("{}.a{}", "def f(g): g | ".repeat(60), "; f(.b)".repeat(60)),
    ];
    let analysed = std::thread::Builder::new()
        // A tokio worker's stack.
        .stack_size(2 << 20)
        .spawn(move || programs.iter().map(|p| demand(p)).collect::<Vec<_>>())
        .unwrap()
        .join()
        .unwrap();
    assert_eq!(analysed[0], "{a: *}");
    assert_eq!(analysed.len(), 4);
}
