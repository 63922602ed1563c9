package lpm

// naive is the reference the tables are checked and measured against: a binary trie, one
// node per prefix bit, as plain as a longest-prefix match gets.
type naive struct {
	root naiveNode
}

type naiveNode struct {
	child [2]*naiveNode
	nh    NextHop
	has   bool
}

func bit(a *[16]byte, i int) int { return int(a[i/8]>>(7-i%8)) & 1 }

func (n *naive) insert(a [16]byte, depth int, nh NextHop) {
	x := &n.root
	for i := 0; i < depth; i++ {
		b := bit(&a, i)
		if x.child[b] == nil {
			x.child[b] = &naiveNode{}
		}
		x = x.child[b]
	}
	x.nh, x.has = nh, true
}

func (n *naive) delete(a [16]byte, depth int) bool {
	x := &n.root
	for i := 0; i < depth && x != nil; i++ {
		x = x.child[bit(&a, i)]
	}
	if x == nil || !x.has {
		return false
	}
	x.has = false
	return true
}

func (n *naive) lookup(a *[16]byte, bits int) (NextHop, bool) {
	var nh NextHop
	found := false
	x := &n.root
	for i := 0; x != nil; i++ {
		if x.has {
			nh, found = x.nh, true
		}
		if i == bits {
			break
		}
		x = x.child[bit(a, i)]
	}
	return nh, found
}
