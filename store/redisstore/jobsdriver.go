package redisstore

// jobsDriver is the store's job queue: the jobsdriver.Driver, with the
// optional interfaces the store implements, that its Backend's Jobs holds.
// The queue's methods are its own, not the Store's, so that a host reaches
// them only through a jobs.Queue; they work on the Store it embeds.
type jobsDriver struct{ *Store }
