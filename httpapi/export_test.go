package httpapi

// ListUploadsHeld counts the list upload slots h's uploads hold.
func ListUploadsHeld(h *Handler) int { return h.listSlots.Held() }
