package measure

import (
	"testing"
)

// TestAddCountsUDP: agents' UDP sockets merge as the smallest buffers
// (an agent that did not read them does not count) and GSO only if every
// agent that read them had it.
func TestAddCountsUDP(t *testing.T) {
	for _, c := range []struct {
		name       string
		parts      []Record
		recv, send int64
		gso        bool
	}{
		{"one", []Record{{UDPRecvBuf: 100, UDPSendBuf: 200, UDPGSO: true}}, 100, 200, true},
		{"smallest", []Record{{UDPRecvBuf: 300, UDPSendBuf: 200, UDPGSO: true}, {UDPRecvBuf: 100, UDPSendBuf: 400, UDPGSO: true}}, 100, 200, true},
		{"one without GSO", []Record{{UDPRecvBuf: 100, UDPSendBuf: 100, UDPGSO: true}, {UDPRecvBuf: 100, UDPSendBuf: 100}}, 100, 100, false},
		{"unread ignored", []Record{{UDPRecvBuf: 100, UDPSendBuf: 100, UDPGSO: true}, {}}, 100, 100, true},
		{"unread first", []Record{{}, {UDPRecvBuf: 100, UDPSendBuf: 100, UDPGSO: true}}, 100, 100, true},
	} {
		var m Record
		for i := range c.parts {
			m.AddCounts(&c.parts[i])
		}
		if m.UDPRecvBuf != c.recv || m.UDPSendBuf != c.send || m.UDPGSO != c.gso {
			t.Errorf("%s: %d/%d/%v, want %d/%d/%v", c.name, m.UDPRecvBuf, m.UDPSendBuf, m.UDPGSO, c.recv, c.send, c.gso)
		}
	}
}
