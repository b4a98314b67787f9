package dashboard

// HoldRespool makes d's column changes call f when they start reading a
// pending list again.
func HoldRespool(d *Dashboard, f func()) { d.lists.respooling = f }

// TakeListSlot takes one of d's upload slots for account, as an upload
// does; it returns nil when none is free.
func TakeListSlot(d *Dashboard, account string) (release func()) {
	slot, _ := d.lists.slots.Take(account, "")
	if slot == nil {
		return nil
	}
	return slot.Release
}

// ListUploadsHeld counts the upload slots d's uploads hold.
func ListUploadsHeld(d *Dashboard) int { return d.lists.slots.Held() }
