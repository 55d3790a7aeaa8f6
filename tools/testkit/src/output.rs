//! Reading back what a tool wrote, the way every test would otherwise
//! spell out again: a JSON array of words, a CSV table by column name.

use serde_json::Value;

/// The strings of a JSON array (a record's `argv`, `flags`, `command`);
/// panics, showing the value, when it is not an array of strings.
#[track_caller]
pub fn strs(v: &Value) -> Vec<&str> {
    v.as_array()
        .unwrap_or_else(|| panic!("not an array: {v}"))
        .iter()
        .map(|w| w.as_str().unwrap_or_else(|| panic!("not a string: {w}")))
        .collect()
}

/// A CSV document read back the way a spreadsheet script would: its
/// header and its rows, every cell as text.
pub struct Csv {
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

impl Csv {
    #[track_caller]
    pub fn parse(text: &str) -> Csv {
        let mut rd = csv::Reader::from_reader(text.as_bytes());
        let header = rd.headers().unwrap().iter().map(String::from).collect();
        let rows = rd
            .records()
            .map(|r| r.unwrap().iter().map(String::from).collect())
            .collect();
        Csv { header, rows }
    }

    /// The index of column `name`; panics, listing the header, without it.
    #[track_caller]
    pub fn col(&self, name: &str) -> usize {
        self.header
            .iter()
            .position(|h| h == name)
            .unwrap_or_else(|| panic!("no column {name}: {:?}", self.header))
    }
}
