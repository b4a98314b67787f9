package uploads

import "testing"

// One account holds at most its share; others still get the rest of
// the instance's slots; a release frees a slot once.
func TestSlots(t *testing.T) {
	s := NewSlots(4, 2)
	a1, why := s.Take("a")
	if why != Granted {
		t.Fatal(why)
	}
	if _, why := s.Take("a"); why != Granted {
		t.Fatal(why)
	}
	if r, why := s.Take("a"); why != AccountBusy || r != nil {
		t.Fatalf("a third upload of one account: %v", why)
	}
	if _, why := s.Take("b"); why != Granted {
		t.Fatal(why)
	}
	if _, why := s.Take("c"); why != Granted {
		t.Fatal(why)
	}
	if _, why := s.Take("d"); why != InstanceBusy {
		t.Fatalf("a fifth upload: %v", why)
	}
	a1()
	a1() // a second release gives nothing back
	if _, why := s.Take("d"); why != Granted {
		t.Fatal(why)
	}
	if _, why := s.Take("e"); why != InstanceBusy {
		t.Fatalf("after one release, two takes: %v", why)
	}
	if _, why := s.Take("a"); why != InstanceBusy {
		t.Fatalf("a's second slot on a full instance: %v", why)
	}
}
