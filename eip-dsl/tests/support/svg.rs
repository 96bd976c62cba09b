//! Reading SVG output: a plan's SVG as checked XML elements, and each node's box.

use std::collections::BTreeMap;

use eip_dsl::graph;
use eip_dsl::plan::Plan;

use super::xml::{Element, parse_xml};

/// A node's box, from its group's `data-*` attributes.
#[derive(Debug, Clone, Copy)]
#[allow(dead_code)] // `graph_formats` only counts boxes; `graph_svg` reads their sides.
pub struct Box2 {
    pub x: f64,
    pub y: f64,
    pub w: f64,
    pub h: f64,
}

pub fn attr_f64(e: &Element, name: &str) -> f64 {
    e.attrs
        .get(name)
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("{} has no numeric {name}", e.name))
}

pub fn node_boxes(elements: &[Element]) -> BTreeMap<String, Box2> {
    elements
        .iter()
        .filter(|e| e.name == "g" && e.attrs.get("class").is_some_and(|c| c.starts_with("node ")))
        .map(|e| {
            let b = Box2 {
                x: attr_f64(e, "data-x"),
                y: attr_f64(e, "data-y"),
                w: attr_f64(e, "data-width"),
                h: attr_f64(e, "data-height"),
            };
            (e.attrs["id"].clone(), b)
        })
        .collect()
}

pub fn svg_elements(plan: &Plan) -> Vec<Element> {
    let svg = graph::svg(plan);
    parse_xml(&svg).unwrap_or_else(|e| panic!("not well-formed: {e}\n{svg}"))
}
