package main

// list is a double-ended queue of strings in a ring buffer whose length is
// a power of two, so that both ends push and pop in constant time and any
// index is found at once.
type list struct {
	ring []string
	head int // where the first element is
	n    int
}

func newList() *list { return new(list) }

// at returns the i-th element.
func (l *list) at(i int) string { return l.ring[(l.head+i)&(len(l.ring)-1)] }

func (l *list) pushFront(v string) {
	l.fit(l.n + 1)
	l.head = (l.head - 1) & (len(l.ring) - 1)
	l.ring[l.head] = v
	l.n++
}

func (l *list) pushBack(v string) {
	l.fit(l.n + 1)
	l.ring[(l.head+l.n)&(len(l.ring)-1)] = v
	l.n++
}

func (l *list) popFront() string {
	v := l.ring[l.head]
	l.ring[l.head] = ""
	l.head = (l.head + 1) & (len(l.ring) - 1)
	l.n--
	l.fit(l.n)
	return v
}

func (l *list) popBack() string {
	i := (l.head + l.n - 1) & (len(l.ring) - 1)
	v := l.ring[i]
	l.ring[i] = ""
	l.n--
	l.fit(l.n)
	return v
}

// fit makes the ring hold n elements: it doubles it when full, and halves
// it when a quarter full, so a list that shrank gives its memory back.
func (l *list) fit(n int) {
	size := len(l.ring)
	switch {
	case n > size:
		size = max(8, 2*size)
	case size > 64 && n < size/4:
		size /= 2
	default:
		return
	}
	ring := make([]string, size)
	for i := range l.n {
		ring[i] = l.at(i)
	}
	l.ring, l.head = ring, 0
}

func lpush(c *call) { c.push((*list).pushFront) }

func rpush(c *call) { c.push((*list).pushBack) }

// push is LPUSH and RPUSH key element [element ...]: it replies the length.
func (c *call) push(add func(*list, string)) {
	sh, l, ok := openOrAdd(c, newList)
	if !ok {
		return
	}
	defer c.unlock(sh)
	for _, v := range c.args[2:] {
		add(l, string(v))
	}
	c.integer(int64(l.n))
	sh.touch(string(c.args[1]))
	c.ready(sh, c.args[1])
}

func lpop(c *call) { c.popList((*list).popFront) }

func rpop(c *call) { c.popList((*list).popBack) }

// popList is LPOP and RPOP key [count]: one element, or an array of up to
// count. The list goes when its last element does.
func (c *call) popList(take func(*list) string) {
	if len(c.args) > 3 {
		c.errorText(c.cmd.arityErr)
		return
	}
	count, err := c.countArg()
	if err != nil {
		c.error(err)
		return
	}
	sh, e, l, ok := openKey[*list](c)
	if !ok {
		return
	}
	defer c.unlock(sh)
	switch {
	case e == nil && count < 0:
		c.null()
		return
	case e == nil:
		c.nullArray()
		return
	case count < 0:
		c.bulkString(take(l))
	default:
		n := min(count, l.n)
		c.array(n)
		for range n {
			c.bulkString(take(l))
		}
	}
	sh.touch(e.key)
	sh.dropEmpty(e)
}

func llen(c *call) { replyLen[*list](c) }

// lrange is LRANGE key start stop.
func lrange(c *call) {
	sh, l, lo, hi, ok := openRange[*list](c)
	if !ok {
		return
	}
	defer c.unlock(sh)
	c.array(hi - lo + 1)
	for i := lo; i <= hi; i++ {
		c.bulkString(l.at(i))
	}
}

// lindex is LINDEX key index; a negative index counts from the end.
func lindex(c *call) {
	i, err := parseInt(c.args[2])
	if err != nil {
		c.error(err)
		return
	}
	sh, _, l, ok := openKey[*list](c)
	if !ok {
		return
	}
	defer c.unlock(sh)
	if i < 0 {
		i += int64(l.len())
	}
	if i < 0 || i >= int64(l.len()) {
		c.null()
		return
	}
	c.bulkString(l.at(int(i)))
}
