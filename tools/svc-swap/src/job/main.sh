main() {
  say phase=installing
  if ! install; then abandon "cannot install $path"; return; fi
  if [ "$mode" != keep ] && ! m_reload; then abandon "reload failed"; return; fi
  say phase=installed
  await_go || return
  say phase=stopping
  say "t_stop=$(date +%s%N)"
  if m_stop && settle; then
    say phase=starting
    say "t_start=$(date +%s%N)"
    if m_start new; then
      # The new argv, for svc-swap's check without another round trip.
      say "cmdline_hex=$(od -An -v -tx1 <"/proc/$pid/cmdline" 2>/dev/null | tr -d ' \n')"
      [ -z "$restores" ] || rm -f -- "$restores"
      prune
      say result=new
      return
    fi
    say "error=the new config failed to start"
  fi
  say phase=restoring
  undo
  [ "$mode" = keep ] || m_reload
  if m_restart_old; then say result=old; else say result=none; fi
}
main
say phase=done
