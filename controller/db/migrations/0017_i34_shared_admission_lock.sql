-- ADR 0039: admissions to a seat hold its advisory lock in shared mode, so they no longer wait for each
-- other's commits; whatever chooses the head of the seat's line takes it in exclusive mode first and then
-- reads the line. A statement's snapshot is taken before its lock waits, so the reads after the lock are
-- in these VOLATILE functions, whose statements each take a snapshot of their own: the line they return
-- holds every admission that stamped its place before the lock was granted.
CREATE FUNCTION clankie_seat_line(p_seat text, p_lock bigint) RETURNS SETOF seat_waiters
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  PERFORM pg_advisory_xact_lock(p_lock);
  RETURN QUERY SELECT * FROM seat_waiters WHERE seat_id = p_seat;
END
$$;
--> statement-breakpoint
-- A row the line returned may have committed after the calling statement's snapshot: its delete must see it.
CREATE FUNCTION clankie_leave_line(p_holder text) RETURNS SETOF text
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  RETURN QUERY DELETE FROM seat_waiters WHERE holder = p_holder RETURNING holder;
END
$$;
