package starconf

// `load` is a keyword in Starlark, so `step.load(…)` and `step.load.main`
// would not parse. Before parsing, every `.load` attribute access outside
// strings and comments is renamed to `.LOAD` (same length, so every
// position stays exact), and the attribute LOAD reads as "load".
const loadAttr = "LOAD"

func attrName(name string) string {
	if name == loadAttr {
		return "load"
	}
	return name
}

func isIdentByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c >= 0x80
}

// renameLoadAttr returns src with `.load` attribute accesses renamed. It
// copies src only when something is renamed.
func renameLoadAttr(src []byte) []byte {
	out := src
	copied := false
	for i := 0; i < len(src); i++ {
		switch c := src[i]; c {
		case '#':
			for i < len(src) && src[i] != '\n' {
				i++
			}
		case '\'', '"':
			triple := i+2 < len(src) && src[i+1] == c && src[i+2] == c
			if triple {
				i += 3
				for i < len(src) && !(src[i] == c && i+2 < len(src) && src[i+1] == c && src[i+2] == c) {
					if src[i] == '\\' {
						i++
					}
					i++
				}
				i += 2
			} else {
				i++
				for i < len(src) && src[i] != c && src[i] != '\n' {
					if src[i] == '\\' {
						i++
					}
					i++
				}
			}
		case '.':
			if i+5 <= len(src) && string(src[i+1:i+5]) == "load" && (i+5 == len(src) || !isIdentByte(src[i+5])) {
				if !copied {
					out = append([]byte(nil), src...)
					copied = true
				}
				copy(out[i+1:], loadAttr)
				i += 4
			}
		}
	}
	return out
}
