# Used as `cmake -DMSG=... -P fail_with_message.cmake`: a test that fails and says why.
message(FATAL_ERROR "${MSG}")
