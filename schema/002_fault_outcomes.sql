-- 002_fault_outcomes.sql: the fault classifier's counters (plugins/faults.c). Every user page
-- fault gets one outcome: handled under the per-VMA lock (vma), retried under it (vma_retry, only
-- on kernels with the VMA-lock retry series), attempted under it and then retried under mmap_lock
-- (mmap_retry), sent straight to mmap_lock (mmap_abort), or fallen back for a reason the events
-- cannot show (mmap_unknown: anonymous and swap faults leave no trace of an attempt; see the
-- README). Also the cost of fallbacks and who takes each process's mmap_lock, from kernel
-- callchains. New columns default to 0 in windows stored before this migration.
--
-- New process_stats columns (INTEGER counts unless noted):
--   faults_vma, faults_vma_retry, faults_mmap_retry, faults_mmap_abort, faults_mmap_unknown
--                            outcomes; their sum is the number of classified faults (<= faults:
--                            a fault still open when the window closed counts in the next one)
--   faults_mmap_fallback     faults_mmap_retry + faults_mmap_abort + faults_mmap_unknown
--   faults_mmap_lock_retries extra mmap_lock acquisitions inside one fault (retries under it)
--   faults_mmap_lock_wait_ns mmap_lock wait of fault fallbacks, nanoseconds
--   faults_pages_reread      pages added to the page cache twice within one fault
--   mmap_lock_by_<source>    successful mmap_lock acquisitions by who took them: fault (the
--                            fallback), fault_other (inside a fault under the VMA lock),
--                            fault_kernel (a fault taken in kernel mode, e.g. copy_from_user in a
--                            system call, which x86 sends straight to mmap_lock), mmap,
--                            munmap, mremap, mprotect, madvise, brk, mlock, mincore, exit, fork,
--                            exec, remote (another process's memory: /proc, ptrace, GUP), other,
--                            unknown (no callchain or symbols)
--
-- Example: the fault split of the busiest processes over the last hour
--   SELECT pid, comm, sum(faults) AS faults, sum(faults_vma) AS vma,
--          sum(faults_vma_retry) AS vma_retry, sum(faults_mmap_retry) AS mmap_retry,
--          sum(faults_mmap_abort) AS mmap_abort, sum(faults_mmap_unknown) AS unknown
--   FROM process_stats WHERE ts_end > strftime('%s','now') - 3600
--   GROUP BY pid, start_time ORDER BY faults DESC LIMIT 10;

ALTER TABLE process_windows ADD COLUMN faults_vma INTEGER NOT NULL DEFAULT 0 CHECK (faults_vma >= 0);
ALTER TABLE process_windows ADD COLUMN faults_vma_retry INTEGER NOT NULL DEFAULT 0 CHECK (faults_vma_retry >= 0);
ALTER TABLE process_windows ADD COLUMN faults_mmap_retry INTEGER NOT NULL DEFAULT 0 CHECK (faults_mmap_retry >= 0);
ALTER TABLE process_windows ADD COLUMN faults_mmap_abort INTEGER NOT NULL DEFAULT 0 CHECK (faults_mmap_abort >= 0);
ALTER TABLE process_windows ADD COLUMN faults_mmap_unknown INTEGER NOT NULL DEFAULT 0 CHECK (faults_mmap_unknown >= 0);
ALTER TABLE process_windows ADD COLUMN faults_mmap_fallback INTEGER NOT NULL DEFAULT 0 CHECK (faults_mmap_fallback >= 0);
ALTER TABLE process_windows ADD COLUMN faults_mmap_lock_retries INTEGER NOT NULL DEFAULT 0 CHECK (faults_mmap_lock_retries >= 0);
ALTER TABLE process_windows ADD COLUMN faults_mmap_lock_wait_ns INTEGER NOT NULL DEFAULT 0 CHECK (faults_mmap_lock_wait_ns >= 0);
ALTER TABLE process_windows ADD COLUMN faults_pages_reread INTEGER NOT NULL DEFAULT 0 CHECK (faults_pages_reread >= 0);
ALTER TABLE process_windows ADD COLUMN mmap_lock_by_fault INTEGER NOT NULL DEFAULT 0 CHECK (mmap_lock_by_fault >= 0);
ALTER TABLE process_windows ADD COLUMN mmap_lock_by_fault_other INTEGER NOT NULL DEFAULT 0 CHECK (mmap_lock_by_fault_other >= 0);
ALTER TABLE process_windows ADD COLUMN mmap_lock_by_fault_kernel INTEGER NOT NULL DEFAULT 0 CHECK (mmap_lock_by_fault_kernel >= 0);
ALTER TABLE process_windows ADD COLUMN mmap_lock_by_mmap INTEGER NOT NULL DEFAULT 0 CHECK (mmap_lock_by_mmap >= 0);
ALTER TABLE process_windows ADD COLUMN mmap_lock_by_munmap INTEGER NOT NULL DEFAULT 0 CHECK (mmap_lock_by_munmap >= 0);
ALTER TABLE process_windows ADD COLUMN mmap_lock_by_mremap INTEGER NOT NULL DEFAULT 0 CHECK (mmap_lock_by_mremap >= 0);
ALTER TABLE process_windows ADD COLUMN mmap_lock_by_mprotect INTEGER NOT NULL DEFAULT 0 CHECK (mmap_lock_by_mprotect >= 0);
ALTER TABLE process_windows ADD COLUMN mmap_lock_by_madvise INTEGER NOT NULL DEFAULT 0 CHECK (mmap_lock_by_madvise >= 0);
ALTER TABLE process_windows ADD COLUMN mmap_lock_by_brk INTEGER NOT NULL DEFAULT 0 CHECK (mmap_lock_by_brk >= 0);
ALTER TABLE process_windows ADD COLUMN mmap_lock_by_mlock INTEGER NOT NULL DEFAULT 0 CHECK (mmap_lock_by_mlock >= 0);
ALTER TABLE process_windows ADD COLUMN mmap_lock_by_mincore INTEGER NOT NULL DEFAULT 0 CHECK (mmap_lock_by_mincore >= 0);
ALTER TABLE process_windows ADD COLUMN mmap_lock_by_exit INTEGER NOT NULL DEFAULT 0 CHECK (mmap_lock_by_exit >= 0);
ALTER TABLE process_windows ADD COLUMN mmap_lock_by_fork INTEGER NOT NULL DEFAULT 0 CHECK (mmap_lock_by_fork >= 0);
ALTER TABLE process_windows ADD COLUMN mmap_lock_by_exec INTEGER NOT NULL DEFAULT 0 CHECK (mmap_lock_by_exec >= 0);
ALTER TABLE process_windows ADD COLUMN mmap_lock_by_remote INTEGER NOT NULL DEFAULT 0 CHECK (mmap_lock_by_remote >= 0);
ALTER TABLE process_windows ADD COLUMN mmap_lock_by_other INTEGER NOT NULL DEFAULT 0 CHECK (mmap_lock_by_other >= 0);
ALTER TABLE process_windows ADD COLUMN mmap_lock_by_unknown INTEGER NOT NULL DEFAULT 0 CHECK (mmap_lock_by_unknown >= 0);
